"""MkDocs hook for the letitloop site: the pages that are generated, pulled in or listed by glob.

- The reference pages (``reference/*.md``) are written at build time from the code itself: the
  Python API from the public names (``letitloop.__all__``, the errors module, the journal's face,
  every public adapter module) through mkdocstrings, and the CLI reference from ``lil --help`` of
  every command and subcommand. Nothing generated is committed, so it cannot go stale.
- ``examples/*/README.md`` (and the files beside each) join the site under ``examples/``; their
  relative links into ``docs/`` are rewritten to the site's pages.
- A nav entry whose value is a glob (``examples/*/README.md``, ``adr/*.md``) becomes the list of
  matching pages, so a new example folder or decision record needs no line in ``mkdocs.yml``; a
  page listed nowhere is added under "More" rather than left unreachable.
"""

from __future__ import annotations

import fnmatch
import logging
import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT, Path(__file__).parent):  # the checkout's letitloop; reference.py beside
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from reference import api_pages, cli_page  # noqa: E402  (docs/_hooks/reference.py)

log = logging.getLogger("mkdocs.hooks.letitloop")
SKIP_PARTS = {"__pycache__", ".letitloop", ".ipynb_checkpoints", ".pytest_cache"}
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages and the examples, then expand the nav's globs."""
    for path, text in {**api_pages(), "reference/cli.md": cli_page()}.items():
        files.append(File.generated(config, path, content=text))
    checkout = Path(config.docs_dir).parent  # examples/ sits beside docs/
    for source in sorted((checkout / "examples").glob("**/*")):
        rel = source.relative_to(checkout)
        if source.is_file() and not SKIP_PARTS.intersection(rel.parts):
            files.append(File.generated(config, rel.as_posix(), abs_src_path=str(source)))
    if files.get_file_from_path("examples/README.md") is None:
        files.append(File.generated(config, "examples/README.md", content=_cookbook(checkout)))
    pages = [f.src_uri for f in files.documentation_pages()]
    config.nav = _expand(config.nav, pages)
    listed = set(_listed(config.nav))
    more = [uri for uri in pages if uri not in listed and not uri.startswith("_")]
    if more:
        log.info("pages listed nowhere in the nav, added under More: %s", ", ".join(more))
        config.nav.append({"More": more})
    return files


def _cookbook(checkout: Path) -> str:
    """The examples' front page when examples/README.md does not exist: each example's title and
    first paragraph, by folder."""
    out = ["# Examples\n", "Each example is a folder of `examples/` with a README.\n"]
    for readme in sorted(checkout.glob("examples/*/README.md")):
        blocks = [b.strip() for b in readme.read_text().split("\n\n") if b.strip()]
        title = blocks[0].lstrip("# ").strip() if blocks else readme.parent.name
        first = next((b for b in blocks[1:] if not b.startswith(("#", "```", "|"))), "")
        first = LINK.sub(r"\1", " ".join(first.split()))  # its links point from its folder
        out.append(f"- [{title}]({readme.parent.name}/README.md): {first}")
    return "\n".join(out) + "\n"


def _expand(nav: Any, pages: list[str]) -> Any:
    """The nav with each glob string replaced by the sorted pages it matches (dropped if none)."""
    if isinstance(nav, list):
        out = []
        for item in nav:
            expanded = _expand(item, pages)
            if isinstance(item, str) and isinstance(expanded, list):
                out += expanded  # a glob among pages: its matches take its place
            elif expanded is not None:
                out.append(expanded)
        return out
    if isinstance(nav, dict):
        out_dict = {}
        for title, value in nav.items():
            expanded = _expand(value, pages)
            if expanded not in (None, []):
                out_dict[title] = expanded
        return out_dict or None
    if isinstance(nav, str) and "*" in nav:
        return sorted(uri for uri in pages if fnmatch.fnmatch(uri, nav)) or None
    return nav


def _listed(nav: Any) -> list[str]:
    if isinstance(nav, list):
        return [uri for item in nav for uri in _listed(item)]
    if isinstance(nav, dict):
        return [uri for value in nav.values() for uri in _listed(value)]
    return [nav] if isinstance(nav, str) else []


# a fence naming the environment its block runs in (```python smolagents): tests/test_docs.py
# reads the second word; on the site it is a plain Python block
ENV_FENCE = re.compile(r"^(\s*```+)python [a-z][a-z0-9_-]*\s*$", re.MULTILINE)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Write an environment-named fence as a Python fence, and rewrite an example README's
    links to ``docs/`` pages (written for the repository's layout) into links to the same pages
    on the site."""
    markdown = ENV_FENCE.sub(r"\1python", markdown)
    uri = page.file.src_uri
    if not uri.startswith("examples/"):
        return markdown
    here = posixpath.dirname(uri)

    def fix(match: re.Match[str]) -> str:
        text, target = match.groups()
        if "://" in target or target.startswith(("#", "mailto:")):
            return match.group(0)
        path, _, anchor = target.partition("#")
        in_repo = posixpath.normpath(posixpath.join(here, path))
        if in_repo.startswith("docs/"):
            site = posixpath.relpath(in_repo.removeprefix("docs/"), here)
            return f"[{text}]({site}{'#' + anchor if anchor else ''})"
        if in_repo == "README.md":
            return f"[{text}]({posixpath.relpath('index.md', here)})"
        return match.group(0)

    return LINK.sub(fix, markdown)
