"""Authenticated entry points: what ``lil runs resume`` may import.

Resuming a run by name imports the module its ``runs.entry`` names, which runs that module's
code. The journal is data, never code: so the entry point is journaled with an HMAC under the
journal's key (the key that authenticates pickled outputs, kept outside the journal), over the
run id, the workflow, the entry and the encoded arguments. Resume imports nothing whose MAC does
not verify: a tampered ``runs.entry`` or argument blob is refused, never executed.

    stored entry:  "<module or script path>:<qualname>|hmac=<64 hex digits>"
"""

from __future__ import annotations

from letitloop._digest import compare_digest, sha256
from letitloop.errors import TamperedDataError
from letitloop.kernel._codec import Codec

_SEP = "|hmac="


def _message(run_id: str, workflow: str, entry: str, args: tuple[str, bytes] | None) -> bytes:
    codec, data = args if args is not None else ("", b"")
    head = "\n".join(("letitloop-entry/1", run_id, workflow, entry, codec)).encode()
    return head + b"\n" + sha256(data).digest()


def sign_entry(
    codec: Codec, run_id: str, workflow: str, entry: str | None, args: tuple[str, bytes] | None
) -> str | None:
    """The entry point as journaled: with its MAC when the journal has a key."""
    if entry is None:
        return None
    mac = codec.mac(_message(run_id, workflow, entry, args))
    return entry if mac is None else f"{entry}{_SEP}{mac.hex()}"


def entry_point(stored: str) -> str:
    """The ``module:qualname`` part of a journaled entry (what people are shown)."""
    return stored.rpartition(_SEP)[0] if _SEP in stored else stored


def verify_entry(
    codec: Codec, run_id: str, workflow: str, stored: str, args: tuple[str, bytes] | None
) -> str:
    """The entry point to import, if its MAC verifies under the journal's key; else refuse."""
    entry, sep, mac_hex = stored.rpartition(_SEP)
    expected = codec.mac(_message(run_id, workflow, entry, args)) if sep else None
    try:
        given = bytes.fromhex(mac_hex) if sep else b""
    except ValueError:
        given = b""
    if expected is None or not compare_digest(given, expected):
        raise TamperedDataError(
            f"run {run_id} cannot be resumed by name: its journaled entry point "
            f"{entry_point(stored)!r} (and arguments) are not authenticated with this journal's "
            "key: they were changed after the run started, written by another letitloop "
            "version, or under another key; nothing was imported",
            fix="call the workflow again from your own code; if the journal is not yours, do "
            "not trust it",
            run_id=run_id,
        )
    return entry
