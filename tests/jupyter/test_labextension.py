"""The committed prebuilt lab extension matches its TypeScript sources (``make labextension``
rebuilds it and records the hash of the sources it was built from)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "packages" / "labextension"
BUILT = ROOT / "letitloop" / "jupyter" / "labextension"


def sources_hash() -> tuple[str, list[str]]:
    """The hash ``packages/labextension/scripts/stamp.mjs`` records, computed the same way."""
    files = ["package.json", "tsconfig.json"]
    files += [f"src/{p.name}" for p in (SOURCES / "src").iterdir()]
    files += [f"style/{p.name}" for p in (SOURCES / "style").iterdir()]
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + (SOURCES / name).read_bytes() + b"\0")
    return digest.hexdigest(), sorted(files)


def test_prebuilt_extension_was_built_from_these_sources() -> None:
    stamp = json.loads((BUILT / "sources.json").read_text())
    digest, files = sources_hash()
    assert stamp["files"] == files
    assert stamp["sha256"] == digest, "src/ changed since the build: run `make labextension`"


def test_prebuilt_extension_is_complete() -> None:
    meta = json.loads((BUILT / "package.json").read_text())
    assert meta["name"] == "letitloop"
    entry = meta["jupyterlab"]["_build"]["load"]
    assert (BUILT / entry).is_file()
    assert json.loads((BUILT / "install.json").read_text())["packageName"] == "letitloop"
