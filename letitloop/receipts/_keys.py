"""Signing and verifying keys for receipts: an HMAC-SHA256 secret, and optionally Ed25519.

The HMAC secret comes from ``LIL_RECEIPT_KEY`` (or a key file): whoever verifies needs the same
secret. An Ed25519 private key (PEM, ``LIL_RECEIPT_SIGNING_KEY`` or a file) adds a second
signature that anyone holding only the public key (``LIL_RECEIPT_PUBLIC_KEY`` or a file) can
check. Every key has a short id derived from it, written next to each signature, so a verifier
can say "signed with another key" instead of just "bad signature". ``cryptography`` is imported
only when an Ed25519 key is used.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from letitloop.receipts._errors import ReceiptKeyError

ENV_KEY = "LIL_RECEIPT_KEY"
ENV_SIGNING_KEY = "LIL_RECEIPT_SIGNING_KEY"
ENV_PUBLIC_KEY = "LIL_RECEIPT_PUBLIC_KEY"
SECRET_ENV = (ENV_KEY, ENV_SIGNING_KEY)  # never passed on to the command under test
MIN_SECRET = 16
MIN_DISTINCT = 8  # "xxxx..." is long enough but no secret
# what a public key looks like: never accepted as an HMAC secret
_PUBLIC_PREFIXES = (b"ssh-", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-")
HMAC_ALG = "hmac-sha256"
ED25519_ALG = "ed25519"
_NEW_SECRET = "python -c 'import secrets; print(secrets.token_hex(32))'"


class Signer(Protocol):
    @property
    def alg(self) -> str: ...
    @property
    def key_id(self) -> str: ...
    def sign(self, message: bytes) -> str: ...


class Verifier(Protocol):
    @property
    def alg(self) -> str: ...
    @property
    def key_id(self) -> str: ...
    def verify(self, message: bytes, signature: str) -> bool: ...


@dataclass(frozen=True)
class HmacKey:
    """A shared secret: signs and verifies with HMAC-SHA256 (hex), compared in constant time."""

    secret: bytes = field(repr=False)
    alg: str = HMAC_ALG

    @property
    def key_id(self) -> str:
        digest = hashlib.sha256(b"letitloop-receipt-key-id\0" + self.secret).hexdigest()
        return f"hmac:{digest[:16]}"

    def sign(self, message: bytes) -> str:
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def verify(self, message: bytes, signature: str) -> bool:
        signature = str(signature)
        if not signature.isascii():  # compare_digest raises on non-ASCII text: just a mismatch
            return False
        return hmac.compare_digest(self.sign(message), signature)


def _ed25519_id(raw_public: bytes) -> str:
    return f"ed25519:{hashlib.sha256(raw_public).hexdigest()[:16]}"


@dataclass(frozen=True)
class Ed25519Signer:
    """An Ed25519 private key: signatures (base64) that a public key alone can check."""

    private: Any = field(repr=False)  # cryptography's Ed25519PrivateKey
    alg: str = ED25519_ALG

    @property
    def key_id(self) -> str:
        return _ed25519_id(_raw_public(self.private.public_key()))

    def sign(self, message: bytes) -> str:
        signature: bytes = self.private.sign(message)
        return base64.b64encode(signature).decode()

    def public_pem(self) -> str:
        from cryptography.hazmat.primitives import serialization

        pem: bytes = self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return pem.decode()


@dataclass(frozen=True)
class Ed25519Verifier:
    """An Ed25519 public key."""

    public: Any = field(repr=False)  # cryptography's Ed25519PublicKey
    alg: str = ED25519_ALG

    @property
    def key_id(self) -> str:
        return _ed25519_id(_raw_public(self.public))

    def verify(self, message: bytes, signature: str) -> bool:
        from cryptography.exceptions import InvalidSignature

        try:
            self.public.verify(base64.b64decode(str(signature), validate=True), message)
        except (InvalidSignature, ValueError):
            return False
        return True


def _raw_public(public: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    raw: bytes = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw


def hmac_key(secret: str | bytes, *, source: str) -> HmacKey:
    """An ``HmacKey`` from a secret, refusing short ones (a guessable key proves nothing)."""
    raw = secret.encode() if isinstance(secret, str) else bytes(secret)
    raw = raw.strip()
    if b"-----BEGIN" in raw or raw.startswith(_PUBLIC_PREFIXES):
        raise ReceiptKeyError(
            f"the receipt key from {source} is a PEM or SSH key, not an HMAC secret: a public "
            "key as the secret would let anyone forge receipts",
            fix="verify Ed25519 signatures with --public-key FILE (or $LIL_RECEIPT_PUBLIC_KEY); "
            f"the HMAC secret is random text, e.g. from `{_NEW_SECRET}`",
        )
    if len(raw) < MIN_SECRET:
        raise ReceiptKeyError(
            f"the receipt key from {source} is {len(raw)} bytes; at least {MIN_SECRET} are needed",
            fix=f"generate a key with `{_NEW_SECRET}` and store it as a CI secret",
        )
    if len(set(raw)) < MIN_DISTINCT:
        raise ReceiptKeyError(
            f"the receipt key from {source} has only {len(set(raw))} distinct bytes: it is not a "
            "random secret",
            fix=f"generate a key with `{_NEW_SECRET}` and store it as a CI secret",
        )
    return HmacKey(raw)


def ed25519_signer(pem: str | bytes, *, source: str) -> Ed25519Signer:
    """An ``Ed25519Signer`` from a PEM private key (``openssl genpkey -algorithm ed25519``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ReceiptKeyError(
            f"the Ed25519 signing key from {source} cannot be read: {exc}",
            fix="give an unencrypted PEM private key made by "
            "`openssl genpkey -algorithm ed25519 -out receipt-key.pem`",
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ReceiptKeyError(
            f"the signing key from {source} is a {type(key).__name__}, not an Ed25519 key",
            fix="make one with `openssl genpkey -algorithm ed25519 -out receipt-key.pem`",
        )
    return Ed25519Signer(key)


def ed25519_verifier(pem: str | bytes, *, source: str) -> Ed25519Verifier:
    """An ``Ed25519Verifier`` from a PEM public key (``openssl pkey -pubout``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = pem.encode() if isinstance(pem, str) else pem
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise ReceiptKeyError(
            f"the Ed25519 public key from {source} cannot be read: {exc}",
            fix="give the PEM public key made by "
            "`openssl pkey -in receipt-key.pem -pubout -out receipt-key.pub`",
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise ReceiptKeyError(
            f"the public key from {source} is a {type(key).__name__}, not an Ed25519 key",
            fix="give the public half of the Ed25519 signing key",
        )
    return Ed25519Verifier(key)


def generate_ed25519() -> tuple[str, str]:
    """A new Ed25519 key pair as PEM text: ``(private, public)``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return private, Ed25519Signer(key).public_pem()


def _read(path: str | os.PathLike[str], what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ReceiptKeyError(
            f"cannot read the {what} file {os.fspath(path)!r}: {exc.strerror or exc}",
            fix="check the path and its permissions",
        ) from None


def _secret(
    key: str | bytes | None, key_file: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> HmacKey | None:
    if key is not None:
        return hmac_key(key, source="the key argument")
    if key_file is not None:
        return hmac_key(_read(key_file, "receipt key"), source=f"--key-file {key_file}")
    if env.get(ENV_KEY):
        return hmac_key(env[ENV_KEY], source=f"${ENV_KEY}")
    return None


def signers(
    *,
    key: str | bytes | None = None,
    key_file: str | os.PathLike[str] | None = None,
    signing_key: str | bytes | None = None,
    signing_key_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Signer]:
    """The keys a new receipt is signed with: the HMAC secret (argument, file, else
    ``$LIL_RECEIPT_KEY``) and the Ed25519 key (argument, file, else
    ``$LIL_RECEIPT_SIGNING_KEY``). At least one is required."""
    env = os.environ if env is None else env
    out: list[Signer] = []
    secret = _secret(key, key_file, env)
    if secret is not None:
        out.append(secret)
    signer = _ed25519(ed25519_signer, "signing key", signing_key, signing_key_file, env)
    if signer is not None:
        out.append(signer)
    if not out:
        raise ReceiptKeyError(
            "no key to sign the receipt with: a receipt without a secret key is a hash anyone "
            "can recompute",
            fix=f"set ${ENV_KEY} (e.g. from a CI secret; make one with `{_NEW_SECRET}`), or "
            "pass --key-file FILE, or an Ed25519 key with --signing-key FILE",
        )
    return out


def verifiers(
    *,
    key: str | bytes | None = None,
    key_file: str | os.PathLike[str] | None = None,
    public_key: str | bytes | None = None,
    public_key_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Verifier]:
    """The keys a receipt is checked against: the HMAC secret (as for signing) and/or an
    Ed25519 public key (argument, file, else ``$LIL_RECEIPT_PUBLIC_KEY``)."""
    env = os.environ if env is None else env
    out: list[Verifier] = []
    secret = _secret(key, key_file, env)
    if secret is not None:
        out.append(secret)
    verifier = _ed25519(ed25519_verifier, "public key", public_key, public_key_file, env)
    if verifier is not None:
        out.append(verifier)
    if not out:
        raise ReceiptKeyError(
            "no key to verify the receipt with",
            fix=f"set ${ENV_KEY} to the secret the receipt was signed with (or --key-file "
            f"FILE), or give the Ed25519 public key with --public-key FILE or ${ENV_PUBLIC_KEY}",
        )
    return out


def _ed25519(
    make: Callable[..., Any],
    what: str,
    value: str | bytes | None,
    file: str | os.PathLike[str] | None,
    env: Mapping[str, str],
) -> Any:
    """An Ed25519 key from the argument, else its file, else its environment variable."""
    name = ENV_SIGNING_KEY if what == "signing key" else ENV_PUBLIC_KEY
    if value is not None:
        return make(value, source=f"the {what.replace(' ', '_')} argument")
    if file is not None:
        return make(_read(file, what), source=f"--{what.replace(' ', '-')} {file}")
    if env.get(name):
        return make(env[name], source=f"${name}")
    return None
