"""``verify``: decide whether a receipt proves what it claims, check by named check.

Order: the signature (constant-time, by a key the verifier holds) and every payload field
against its signed digest; only an authentic payload is checked further: its format, its commit
against ``HEAD`` (or the commit given), each protected signature against the code now, the exit
code and the test counts (unless failures are allowed), and with ``rerun`` the command run
again here with the same outcome. Every check that fails names what was expected and found.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from letitloop.receipts import _git, _junit, _keys, _signatures
from letitloop.receipts._canonical import FORMAT, check_envelope
from letitloop.receipts._errors import ProtectError
from letitloop.receipts._model import Check, Receipt, VerifyResult


def _load(receipt: Receipt | dict[str, Any] | str | os.PathLike[str]) -> Receipt:
    if isinstance(receipt, Receipt):
        return receipt
    if isinstance(receipt, dict):
        return Receipt.from_dict(receipt)
    return Receipt.load(receipt)


def signature_checks(receipt: Receipt, verifiers: Sequence[_keys.Verifier]) -> list[Check]:
    """The ``signature`` check, then one ``payload.FIELD`` check per field edited after
    signing."""
    result = check_envelope(receipt.envelope, verifiers)
    checks = [
        Check(
            "signature",
            result.signed,
            expected=f"a valid signature by {' or '.join(result.expected_key_ids)}",
            found=(
                f"valid signature by {result.key_id}"
                if result.signed
                else ", ".join(result.found_key_ids) or "no signature"
            ),
            detail=result.reason if not result.signed else f"signed by {result.key_id}",
        )
    ]
    for name in result.changed:
        field = name.lstrip("+-")
        what = {"+": "added after signing", "-": "removed after signing"}.get(
            name[0], "changed after signing"
        )
        checks.append(
            Check(
                f"payload.{field}",
                False,
                expected=result.field_expected.get(field),
                found=result.field_found.get(field),
                detail=f"the payload field {field!r} was {what}",
            )
        )
    return checks


def protected_checks(receipt: Receipt, root: Path, required: Sequence[str]) -> list[Check]:
    """One ``protected:SPEC`` check per signature in the receipt (it must equal the code now)
    and per required spec (it must be in the receipt)."""
    checks = []
    recorded = receipt.protected
    for spec in _signatures.normalize(list(required)):
        if spec not in recorded:
            checks.append(
                Check(
                    f"protected:{spec}",
                    False,
                    expected="recorded in the receipt",
                    found="absent",
                    detail="the receipt does not record this protected function, so it "
                    "proves nothing about it",
                )
            )
    for spec, entry in sorted(recorded.items()):
        try:
            now = _signatures.read_protected([spec], root)[spec]
        except ProtectError as exc:
            checks.append(
                Check(
                    f"protected:{spec}",
                    False,
                    expected=entry["signature"]["text"],
                    found=None,
                    detail=exc.message,
                )
            )
            continue
        reasons = _signatures.compare(entry, now, additive=False)
        checks.append(
            Check(
                f"protected:{spec}",
                not reasons,
                expected=entry["signature"]["text"],
                found=now["signature"]["text"],
                detail="; ".join(reasons) if reasons else "unchanged",
            )
        )
    return checks


def outcome_checks(receipt: Receipt, *, allow_failures: bool) -> list[Check]:
    """``exit_code`` (0) and ``tests`` (no failures or errors), unless failures are allowed."""
    code = receipt.exit_code
    checks = [
        Check(
            "exit_code",
            code == 0 or allow_failures,
            expected=0,
            found=code,
            detail=("failures allowed" if allow_failures and code != 0 else "")
            or ("the command succeeded" if code == 0 else "the command failed"),
        )
    ]
    tests = receipt.tests
    if tests is None:
        checks.append(Check("tests", True, detail="no JUnit report was recorded"))
        return checks
    if "error" in tests:
        checks.append(
            Check(
                "tests",
                allow_failures,
                expected="a readable JUnit report",
                found=tests["error"],
                detail="the test report could not be read, so the counts are unknown",
            )
        )
        return checks
    bad = int(tests.get("failed", 0)) + int(tests.get("errors", 0))
    counts = {k: tests.get(k) for k in _junit.KEYS}
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    checks.append(
        Check(
            "tests",
            bad == 0 or allow_failures,
            expected={"failed": 0, "errors": 0},
            found={"failed": tests.get("failed"), "errors": tests.get("errors")},
            detail=summary + (" (failures allowed)" if bad and allow_failures else ""),
        )
    )
    return checks


def rerun_checks(receipt: Receipt, root: Path, env: Mapping[str, str]) -> list[Check]:
    """Run the receipt's command again here; its exit code and test counts must match."""
    from letitloop.receipts._run import child_env, execute

    command = receipt.command
    workdir = root / str(receipt.payload.get("cwd") or ".")
    with tempfile.TemporaryDirectory(prefix="lil-rerun-") as tmp:
        junit_file = None
        if receipt.tests is not None and _junit.mentions_pytest(command):
            junit_file = str(Path(tmp, "junit.xml"))
        code, _ = execute(command, cwd=workdir, env=child_env(env, junit_file), stream=False)
        tests = _junit.read_junit(junit_file) if junit_file else None
    checks = [
        Check(
            "rerun.exit_code",
            code == receipt.exit_code,
            expected=receipt.exit_code,
            found=code,
            detail="the command run again here",
        )
    ]
    if receipt.tests is not None and tests is not None:
        before = {k: receipt.tests.get(k) for k in _junit.KEYS}
        after = {k: tests.get(k) for k in _junit.KEYS}
        checks.append(Check("rerun.tests", before == after, expected=before, found=after))
    return checks


def verify(
    receipt: Receipt | dict[str, Any] | str | os.PathLike[str],
    *,
    key: str | bytes | None = None,
    key_file: str | os.PathLike[str] | None = None,
    public_key: str | bytes | None = None,
    public_key_file: str | os.PathLike[str] | None = None,
    commit: str | None = None,
    protect: Sequence[str] = (),
    allow_failures: bool = False,
    rerun: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> VerifyResult:
    """Check a receipt (a path, a ``Receipt`` or its dict) and return the verdict.

    Keys as for ``run``: the HMAC secret (``key``, ``key_file``, ``$LIL_RECEIPT_KEY``) and/or
    the Ed25519 public key (``public_key``, ``public_key_file``, ``$LIL_RECEIPT_PUBLIC_KEY``).
    ``commit`` defaults to ``HEAD`` of ``cwd``. ``protect`` (plus ``[tool.letitloop] protect``
    here) lists functions the receipt must record. Raises only when the receipt or the keys
    cannot be read; a receipt that fails a check gives ``result.ok == False``.
    """
    env = dict(os.environ if env is None else env)
    loaded = _load(receipt)
    verifiers = _keys.verifiers(
        key=key,
        key_file=key_file,
        public_key=public_key,
        public_key_file=public_key_file,
        env=env,
    )
    checks = signature_checks(loaded, verifiers)
    if not all(c.ok for c in checks):
        return VerifyResult(loaded, tuple(checks))  # nothing else in it can be trusted
    workdir = Path(cwd or ".").resolve()
    root = _git.repo_root(workdir) or workdir
    payload_format = loaded.payload.get("format")
    checks.append(Check("format", payload_format == FORMAT, expected=FORMAT, found=payload_format))
    expected = _git.resolve(commit, root) if commit else _git.head(root)
    found = loaded.commit
    checks.append(
        Check(
            "commit",
            expected is not None and found == expected,
            expected=expected or "(no git commit here)",
            found=found or "(the receipt records no commit)",
            detail="the receipt is for the code being verified"
            if found == expected and found
            else "the receipt was made for other code",
        )
    )
    config_protect, _ = _signatures.pyproject_at(root)
    checks += protected_checks(loaded, root, [*protect, *config_protect])
    checks += outcome_checks(loaded, allow_failures=allow_failures)
    if rerun:
        checks += rerun_checks(loaded, root, env)
    return VerifyResult(loaded, tuple(checks))
