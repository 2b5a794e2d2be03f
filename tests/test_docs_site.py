"""The documentation site builds with no warning (`mkdocs build --strict`), its generated reference
pages say what the code says, examples join it by folder, and a broken link fails the build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
yaml = pytest.importorskip("yaml")
pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


def text_of(page: Path) -> str:
    import html
    import re

    body = page.read_text()
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    out = build(ROOT / "mkdocs.yml", site)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "WARNING" not in out.stderr, out.stderr
    api = text_of(site / "reference/api/index.html")
    import letitloop

    for name in letitloop.__all__:  # every public name is documented (errors on their page)
        assert name in api, name
    assert "Make a function durable" in api  # durable's docstring, rendered
    errors = text_of(site / "reference/errors/index.html")
    assert "LeaseLostError" in errors and "RunLockedError" in errors
    cli = text_of(site / "reference/cli/index.html")
    for command in ("lil runs resume", "lil journal sql", "lil approvals approve", "lil splice"):
        assert command in cli, command
    assert "Usage: lil runs fork [OPTIONS] RUN" in cli
    for readme in (ROOT / "examples").glob("*/README.md"):
        assert (site / "examples" / readme.parent.name / "index.html").exists(), readme
    assert (site / "search/search_index.json").exists()
    # a block fenced for its framework's environment (```python smolagents) is a Python block
    # on the site, and the page goes on after it: its later headings exist
    adapters = (site / "adapters/index.html").read_text()
    assert 'id="autogen"' in adapters and 'id="crewai"' in adapters
    assert "```python" not in adapters


def site_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of docs/ and of the config (absolute paths), with a made-up example beside it."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("_hooks"))
    example = tmp_path / "examples" / "zz_made_up"
    example.mkdir(parents=True)
    (example / "run.py").write_text("print('hi')\n")
    (example / "README.md").write_text(
        "# A made-up example\n\nRun [run.py](run.py); the [guide](../../docs/guide.md) and its "
        "[first section](../../docs/guide.md#a-durable-function) say why; "
        "[the front page](../../README.md).\n"
    )
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["docs_dir"] = str(tmp_path / "docs")
    config["hooks"] = [str(ROOT / hook) for hook in config["hooks"]]
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config))
    return path, tmp_path / "docs"


def test_examples_join_the_nav_by_folder_and_keep_their_links(tmp_path: Path) -> None:
    config, _ = site_copy(tmp_path)
    out = build(config, tmp_path / "site")
    assert out.returncode == 0, out.stdout + out.stderr
    page = (tmp_path / "site/examples/zz_made_up/index.html").read_text()
    assert 'href="../../guide/"' in page and 'href="../../guide/#a-durable-function"' in page
    assert (tmp_path / "site/examples/zz_made_up/run.py").exists()
    home = (tmp_path / "site/index.html").read_text()
    assert "A made-up example" in home  # in the nav, with no line in mkdocs.yml


@pytest.mark.parametrize(
    "link", ["[gone](no-such-page.md)", "[gone](guide.md#no-such-anchor)", "[gone](../../x.md)"]
)
def test_a_broken_link_fails_the_build(tmp_path: Path, link: str) -> None:
    config, docs = site_copy(tmp_path)
    (docs / "guide.md").write_text((docs / "guide.md").read_text() + f"\n\nSee {link}.\n")
    out = build(config, tmp_path / "site")
    said = out.stdout + out.stderr
    assert out.returncode != 0, said
    assert "Aborted with 1 warnings in strict mode" in said, said
    assert f"Doc file 'guide.md' contains a link '{link.split('(')[1][:-1]}'" in said, said
