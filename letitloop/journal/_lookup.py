"""Finding a run from what a person types: its id, its key, or an unambiguous prefix of either.

Every backend's ``find_run`` and so every surface (each ``lil runs`` command, ``lil effects``,
``lil approvals --run``, the TUI, ``RunInspector``, the Jupyter API) resolves runs here, so
``lil runs show 9d6d`` finds the run whose key is ``9d6da7dd…`` everywhere alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from letitloop.errors import JournalError

_SHOWN = 10  # candidates named in an ambiguity error


def run_key(run_id: str) -> str:
    """The key part of ``workflow:key`` (the whole id when it has no workflow part)."""
    return run_id.partition(":")[2] or run_id


def match_run(text: str, run_ids: Sequence[str]) -> str:
    """The run id ``text`` names: the run id itself, the run's key, or an unambiguous prefix of
    either (a suffix of the id as a last resort); raise ``JournalError`` listing the candidates
    when several runs match, or saying how to list them when none does."""
    text = text.strip()
    if not text:
        raise JournalError("no run given", fix="name a run: its id, its key or a prefix of either")
    ids = list(dict.fromkeys(run_ids))
    for tier in range(5):
        hits = [r for r in ids if _matches(tier, text, r)]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise _ambiguous(text, sorted(hits))
    raise JournalError(
        f"no run matches {text!r} (by run id, key, or a prefix of either)",
        fix="list runs with `lil runs list`",
    )


def _matches(tier: int, text: str, r: str) -> bool:
    """Tiers, first that matches decides: the id, the key, the workflow (so a workflow's name
    picks its run, not also the child runs of its maps, ``W.NAME:...``), a prefix of the id or
    key, a suffix."""
    if tier == 0:
        return r == text
    if tier == 1:
        return run_key(r) == text or r.rpartition(":")[2] == text
    if tier == 2:
        return r.partition(":")[0] == text
    if tier == 3:
        return r.startswith(text) or run_key(r).startswith(text)
    return r.endswith(text)


def _ambiguous(text: str, hits: list[str]) -> JournalError:
    more = f" and {len(hits) - _SHOWN} more" if len(hits) > _SHOWN else ""
    err = JournalError(
        f"{text!r} matches {len(hits)} runs: {', '.join(hits[:_SHOWN])}{more}",
        fix="type more of the run id or key (`lil runs list` shows them)",
    )
    err.candidates = hits  # type: ignore[attr-defined]
    return err
