"""The hashes the kernel computes on every run, from the interpreter's built-in modules.

``import hashlib`` (and ``hmac``, which imports it) loads OpenSSL's libcrypto: a few ms of every
fresh process, for two functions the interpreter also has built in: BLAKE2b (``_blake2``, the
very object ``hashlib.blake2b`` is) and SHA-256 (``_sha256``; ``_sha2`` from Python 3.12).
``hmac_sha256`` is RFC 2104's HMAC over that SHA-256, byte for byte what
``hmac.new(key, msg, "sha256").digest()`` returns (tests compare them). An interpreter built
without these modules gets hashlib's.
"""

from __future__ import annotations

from _operator import _compare_digest as compare_digest  # what hmac.compare_digest is

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from hashlib import blake2b, sha256
else:
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter without the built-in BLAKE2
        from hashlib import blake2b
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.11
        except ImportError:  # pragma: no cover - an interpreter without the built-in SHA-256
            from hashlib import sha256

__all__ = ["blake2b", "compare_digest", "hmac_sha256", "sha256"]

_BLOCK = 64  # SHA-256's block size, in bytes
_INNER = bytes(x ^ 0x36 for x in range(256))
_OUTER = bytes(x ^ 0x5C for x in range(256))


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    """HMAC-SHA256 of ``msg`` under ``key`` (32 bytes), as ``hmac.digest(key, msg, "sha256")``."""
    if len(key) > _BLOCK:
        key = sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = sha256(key.translate(_INNER))
    inner.update(msg)
    outer = sha256(key.translate(_OUTER))
    outer.update(inner.digest())
    return outer.digest()
