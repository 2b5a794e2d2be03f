"""Splice proposals: an agent proposes a change to one definition, a person applies it.

``propose_splice`` checks that the change applies now and journals it as *pending*, with the
file's hash and the target's current source. ``apply_proposal`` re-reads the file and finds the
target again: if the target is as it was when proposed (the rest of the file may have changed),
the splice is applied and journaled as *applied*; otherwise the proposal is journaled as
*conflict*, with the target's current source beside the proposed one, and nothing is written.
``reject_proposal`` journals *rejected*. Who and when are kept for each decision. Any front end
(the CLI, the TUI, the notebook, the editor) goes through these functions (through
``operate.apply_splice`` and ``reject_splice``), on any backend: without a journal given, the
running durable function's is used, else the one ``letitloop.journal.open_journal`` finds (a
DuckDB file or a ``postgresql://`` URL).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from letitloop.journal import Journal, Proposal
from letitloop.splice._errors import SpliceError, TargetNotFoundError
from letitloop.splice._files import read_source, write_atomically
from letitloop.splice._ops import replace, source_of
from letitloop.splice._result import SpliceResult


class ProposalConflictError(SpliceError):
    """The proposal's target changed since it was proposed; nothing was written."""

    title = "splice proposal in conflict"


def _journal(journal: Journal | None) -> Journal:
    """The journal given, else the running durable function's, else the project's (any
    backend: ``$LIL_JOURNAL`` may be a ``postgresql://`` URL)."""
    if journal is not None:
        return journal
    from letitloop.kernel import current_run

    ctx = current_run.get()
    if ctx is not None:
        return ctx.journal
    from letitloop.journal import open_journal

    return open_journal()


def _who() -> str:
    """Who proposes or decides, when the caller does not say: the one identity every record of
    a decision uses (``user@host``, from the password database when $USER is unset)."""
    from letitloop.journal import who

    return who()


def propose_splice(
    path: str | os.PathLike[str],
    target: str,
    new_code: str,
    *,
    reason: str = "",
    run: str | None = None,
    by: str | None = None,
    journal: Journal | None = None,
) -> Proposal:
    """Journal a pending proposal to replace ``target`` in ``path``; it must apply cleanly now."""
    file = Path(path).resolve()
    text, _ = read_source(file)
    replace(text, target, new_code)  # the same checks an apply makes: fail now, not later
    if run is None:
        from letitloop.kernel import current_run

        ctx = current_run.get()
        run = ctx.run_id if ctx is not None else None
    proposal = Proposal(
        id=uuid.uuid4().hex[:10],
        path=str(file),
        target=target,
        code=new_code,
        reason=reason,
        by=by or _who(),
        created=time.time(),
        base=hashlib.sha256(text.encode()).hexdigest(),
        old=source_of(text, target),
        origin=run,
        state="pending",
    )
    _journal(journal).propose(proposal)
    return proposal


def list_proposals(state: str | None = None, *, journal: Journal | None = None) -> list[Proposal]:
    """Every proposal in the journal, oldest first, or only those in ``state``."""
    return _journal(journal).proposals(state)


def get_proposal(proposal_id: str, *, journal: Journal | None = None) -> Proposal:
    """A proposal by its id or an unambiguous prefix of it."""
    found = [p for p in _journal(journal).proposals() if p.id.startswith(proposal_id)]
    if len(found) == 1:
        return found[0]
    raise SpliceError(
        f"no splice proposal {proposal_id!r}"
        if not found
        else f"{proposal_id!r} matches {len(found)} proposals",
        fix="list them with `lil splice list`",
    )


def apply_proposal(
    proposal_id: str,
    *,
    by: str | None = None,
    comment: str | None = None,
    journal: Journal | None = None,
) -> SpliceResult:
    """Apply a pending proposal if its target is unchanged; else journal a conflict and raise.
    ``comment`` is journaled with the decision (the ``decide`` record's note)."""
    j = _journal(journal)
    with _decision_lock(j):
        p = _pending(get_proposal(proposal_id, journal=j))
        file = Path(p.path)
        text, encoding = read_source(file)
        try:
            current: str | None = source_of(text, p.target)
        except TargetNotFoundError:
            current = None
        if current != p.old:
            note = current if current is not None else f"{p.target} no longer exists"
            j.decide(p.id, "conflict", by or _who(), note)
            raise ProposalConflictError(
                f"proposal {p.id} to replace {p.target} in {file} is in conflict: the target "
                "changed since it was proposed\n--- when proposed ---\n"
                f"{p.old}\n--- now ---\n{note}\n--- proposed ---\n{p.code}",
                fix="merge by hand (lil splice replace), or ask for a new proposal",
                target=p.target,
            )
        result = replace(text, p.target, p.code)
        write_atomically(file, result.source.encode(encoding))
        j.decide(p.id, "applied", by or _who(), comment or None)
        return result


def reject_proposal(
    proposal_id: str,
    *,
    by: str | None = None,
    comment: str | None = None,
    journal: Journal | None = None,
) -> Proposal:
    """Reject a pending proposal; the comment is kept with the decision."""
    j = _journal(journal)
    with _decision_lock(j):
        p = _pending(get_proposal(proposal_id, journal=j))
        j.decide(p.id, "rejected", by or _who(), comment)
        return get_proposal(p.id, journal=j)


def _pending(p: Proposal) -> Proposal:
    if p.state in ("pending", "conflict"):
        return p
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(p.decided_at or 0))
    raise SpliceError(
        f"proposal {p.id} was already {p.state} by {p.decided_by} at {when}",
        fix="nothing to do; `lil splice show ID` shows it",
    )


def _lock_path(journal: Journal) -> Path | None:
    """Where deciders of ``journal`` take turns: beside a DuckDB file; for a journal that is no
    file (PostgreSQL), in the user's private cache directory, named by the journal's id (the
    deciders of this machine take turns, as the files they write are this machine's); None in
    memory."""
    location = getattr(journal, "location", ":memory:")
    if location == ":memory:":
        return None
    if "://" not in location:
        return Path(location).with_name(Path(location).name + ".splice.lock")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(cache) / "letitloop" / "locks"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder / f"splice-{journal.journal_id}.lock"


@contextmanager
def _decision_lock(journal: Journal) -> Iterator[Any]:
    """One decision at a time per journal: two people applying at once cannot both win."""
    lock_path = _lock_path(journal)
    if lock_path is None:
        yield None
        return
    mode = 0o644 if lock_path.name.endswith(".splice.lock") else 0o600  # beside a DuckDB file
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)
