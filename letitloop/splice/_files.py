"""Python source files as the splicer reads and writes them: declared encoding, exact bytes.

A file is decoded with its PEP 263 declaration (or BOM, else UTF-8) and written back atomically
(a temporary file in the same directory, fsync, rename), keeping its permission bits.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import tokenize
from io import BytesIO
from pathlib import Path

from letitloop.splice._errors import SpliceError


def decode(data: bytes, name: str) -> tuple[str, str]:
    """Text and encoding of Python source bytes (PEP 263 declaration or BOM, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise SpliceError(
            f"cannot decode {name}: {exc}",
            fix="save the file as UTF-8, or declare its encoding (# -*- coding: ... -*-)",
        ) from None


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (the file a symlink points to) via a temporary file in the
    same directory and ``os.replace``, keeping the file's permission bits."""
    real = Path(os.path.realpath(path))
    mode = stat.S_IMODE(os.stat(real).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".lil-splice", dir=real.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(real.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def read_source(path: Path) -> tuple[str, str]:
    """A file's text and encoding; a clear error if it cannot be read or decoded."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpliceError(
            f"cannot read {path}: {exc.strerror or exc}", fix="check the path"
        ) from None
    return decode(data, str(path))
