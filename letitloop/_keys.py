"""Where a journal's HMAC key lives, and how it is created safely.

The key authenticates class references and pickles in the journal (see ``kernel._codec``). It is
kept outside the journal, so whoever can change the journal cannot forge it: ``LIL_PICKLE_KEY``
(hex) if set, else ``$LIL_KEY_DIR/<journal id>.key``, else
``$XDG_CONFIG_HOME/letitloop/keys/<journal id>.key`` (``~/.config`` by default). A missing key
file is created atomically with mode 0600; processes racing to create it end with the same key.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import time

from letitloop.errors import ConfigError

KEY_ENV = "LIL_PICKLE_KEY"
KEY_DIR_ENV = "LIL_KEY_DIR"


def key_dir() -> pathlib.Path:
    if explicit := os.environ.get(KEY_DIR_ENV):
        return pathlib.Path(explicit).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return pathlib.Path(config) / "letitloop" / "keys"


def key_hint() -> str:
    return f"{key_dir() / '<journal-id>.key'} (or ${KEY_ENV}, in hex)"


def key_path(journal_id: str) -> pathlib.Path:
    """Where the key of `journal_id` is kept: $LIL_KEY_DIR, else the XDG config directory."""
    if journal_id in ("", ".", "..") or any(c in journal_id for c in "/\\\0"):
        raise ConfigError(
            f"invalid journal id {journal_id!r} for a key file name",
            fix="Use a journal id without path separators.",
        )
    return key_dir() / f"{journal_id}.key"


def load_or_create_key(journal_id: str) -> bytes:
    """The journal's HMAC key: $LIL_PICKLE_KEY (hex), else its key file, created if missing."""
    if env := os.environ.get(KEY_ENV):
        return _parse_key(env, f"${KEY_ENV}")
    path = key_path(journal_id)
    if not path.exists():
        _create_key(path)
    for _ in range(100):  # a racing creator without hard links may still be writing it
        text = path.read_text(encoding="ascii", errors="replace").strip()
        if len(text) >= 64:
            break
        time.sleep(0.01)
    return _parse_key(text, str(path))


def existing_key(journal_id: str) -> bytes | None:
    """The journal's key if one exists ($LIL_PICKLE_KEY, or its key file: a copy's, carried
    there by ``journal._copy.carry_key``), else None; never creates one."""
    if env := os.environ.get(KEY_ENV):
        return _parse_key(env, f"${KEY_ENV}")
    path = key_path(journal_id)
    if not path.exists():
        return None
    return _parse_key(path.read_text(encoding="ascii", errors="replace"), str(path))


def _parse_key(text: str, where: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) < 16:
        raise ConfigError(
            f"the journal key in {where} is not at least 16 bytes of hex",
            fix="Restore the key the journal was written with (64 hex characters).",
        )
    return key


def _create_key(path: pathlib.Path) -> None:
    """Create the key file atomically; if another process wins the race, keep its key."""
    _make_dirs(path.parent)
    import secrets

    data = secrets.token_bytes(32).hex().encode("ascii")
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    _write_new(tmp, data)
    try:
        os.link(tmp, path)  # never replaces an existing key
    except FileExistsError:
        pass
    except OSError:  # no hard links on this file system: create the final name exclusively
        with contextlib.suppress(FileExistsError):
            _write_new(path, data)
    finally:
        os.unlink(tmp)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_new(path: pathlib.Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs(directory: pathlib.Path) -> None:
    """Create missing directories, each with mode 0700 (existing ones are left alone)."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=0o700)
