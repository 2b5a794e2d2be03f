"""Every screenshot ``docs/notebook.md`` shows is in ``docs/img`` (the browser tests take them)."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_image_of_the_notebook_page_exists() -> None:
    images = re.findall(r"!\[[^\]]*\]\((img/[^)]+)\)", (DOCS / "notebook.md").read_text())
    assert {"img/nb-renamed.png", "img/nb-reapproval.png", "img/nb-inspector-preview.png"} <= set(
        images
    )
    missing = [i for i in images if not (DOCS / i).is_file()]
    assert not missing, missing
