"""Protected signatures: each kind of change is detected between revisions and against a
receipt; the additive policy lets new optional parameters through; a pull request cannot
unprotect a function by editing pyproject.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from letitloop.receipts import GitError, ProtectError, run, signature_changes, verify
from letitloop.receipts._signatures import parse_spec
from tests.receipts.conftest import BILLING, KEY, PY, commit

CHARGE = "src/billing.py::charge"
HANDLER = "src/billing.py::Handler"
DEF = 'def charge(amount: int, currency: str = "EUR", *, retries: int = 3) -> bool:'

EDITS = {
    "changed default": (DEF, DEF.replace('"EUR"', '"USD"'), "parameter 'currency' default"),
    "new required parameter": (
        DEF,
        DEF.replace("amount: int,", "amount: int, customer: str,"),
        "'customer'",
    ),
    "removed decorator": ("@functools.cache\n", "", "decorators functools.cache -> (none)"),
    "changed annotation": (DEF, DEF.replace("amount: int", "amount: float"), "annotation int"),
    "changed return annotation": (DEF, DEF.replace("-> bool", "-> int"), "return annotation"),
    "keyword-only became positional": (DEF, DEF.replace("*, ", ""), "changed kind"),
}


def edited(old: str, new: str) -> str:
    assert old in BILLING
    return BILLING.replace(old, new)


@pytest.mark.parametrize("policy", ["exact", "additive"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_each_breaking_change_is_detected(repo: Path, edit: str, policy: str) -> None:
    old, new, phrase = EDITS[edit]
    head = commit(repo, edit, {"src/billing.py": edited(old, new)})
    (change,) = signature_changes("HEAD~1", head, [CHARGE], policy=policy, cwd=repo)
    assert change.status == "changed" and change.violation
    assert any(phrase in r for r in change.reasons), change.reasons
    assert change.old is not None and change.new is not None and change.old != change.new


def test_new_optional_parameter_passes_only_under_additive(repo: Path) -> None:
    optional = DEF.replace("retries: int = 3", "retries: int = 3, note=''")
    head = commit(repo, "optional", {"src/billing.py": edited(DEF, optional)})
    (additive,) = signature_changes("HEAD~1", head, [CHARGE], policy="additive", cwd=repo)
    assert additive.status == "allowed" and not additive.violation
    assert additive.reasons == ("parameter 'note' added",)
    (exact,) = signature_changes("HEAD~1", head, [CHARGE], cwd=repo)
    assert exact.status == "changed" and exact.violation


def test_body_only_change_is_unchanged(repo: Path) -> None:
    head = commit(repo, "body", {"src/billing.py": edited("amount > 0", "amount >= 1")})
    (change,) = signature_changes("HEAD~1", head, [CHARGE], cwd=repo)
    assert change.status == "unchanged" and change.reasons == ()


def test_protecting_a_class_covers_its_methods(repo: Path) -> None:
    text = edited("def post(self, body: dict)", "def post(self, body: dict, raw: bool)")
    text = text.replace("    def get(self) -> int:\n        return 200\n", "")
    head = commit(repo, "handler", {"src/billing.py": text})
    (change,) = signature_changes("HEAD~1", head, [HANDLER], policy="additive", cwd=repo)
    assert change.violation
    assert "get removed" in change.reasons
    assert any(r.startswith("post: new parameter 'raw' has no default") for r in change.reasons)


def test_removed_and_new_protected_functions(repo: Path) -> None:
    refund = "\n\n\ndef refund(amount: int) -> None:\n    pass\n"
    text = BILLING.split("\n\n\nclass Handler")[0] + refund
    head = commit(repo, "remove handler", {"src/billing.py": text})
    changes = signature_changes("HEAD~1", head, [HANDLER, "src/billing.py::refund"], cwd=repo)
    assert [(c.spec, c.status, c.violation) for c in changes] == [
        (HANDLER, "removed", True),
        ("src/billing.py::refund", "new", False),
    ]


def test_pyproject_on_head_cannot_unprotect_or_relax(repo: Path) -> None:
    config = f'[tool.letitloop]\nprotect = ["{CHARGE}"]\nprotect-policy = "exact"\n'
    commit(repo, "protect", {"pyproject.toml": config})
    head = commit(
        repo,
        "sneaky",
        {
            "pyproject.toml": '[tool.letitloop]\nprotect = []\nprotect-policy = "additive"\n',
            "src/billing.py": edited(DEF, DEF.replace("retries: int = 3", "retries: int = 3, x=1")),
        },
    )
    (change,) = signature_changes("HEAD~1", head, cwd=repo)
    assert change.spec == CHARGE and change.status == "changed"


def test_protect_errors_name_the_problem(repo: Path) -> None:
    with pytest.raises(ProtectError, match="does not name a protected function"):
        parse_spec("src/billing.py")
    with pytest.raises(ProtectError, match="chrage") as exc:
        run([PY, "check.py"], cwd=repo, key=KEY, protect=["src/billing.py::chrage"], stream=False)
    assert "'charge'" in exc.value.message  # the splicer's suggestion
    with pytest.raises(ProtectError, match="cannot read"):
        run([PY, "check.py"], cwd=repo, key=KEY, protect=["src/nope.py::f"], stream=False)
    with pytest.raises(ProtectError, match="no protected functions"):
        signature_changes("HEAD", "HEAD", cwd=repo)
    with pytest.raises(GitError, match="not a commit"):
        signature_changes("no-such-rev", "HEAD", [CHARGE], cwd=repo)


def test_verify_compares_protected_signatures_with_the_code_now(repo: Path) -> None:
    receipt = run([PY, "check.py"], cwd=repo, key=KEY, protect=[CHARGE, HANDLER], stream=False)
    assert verify(receipt, key=KEY, cwd=repo).ok
    (repo / "src/billing.py").write_text(edited(DEF, DEF.replace('"EUR"', '"USD"')))
    result = verify(receipt, key=KEY, cwd=repo)
    assert result.failed_names == [f"protected:{CHARGE}"]
    check = result.check(f"protected:{CHARGE}")
    assert check is not None
    assert "currency: str='EUR'" in check.expected and "currency: str='USD'" in check.found
    assert "default 'EUR' -> 'USD'" in check.detail


def test_verify_requires_configured_protections_in_the_receipt(repo: Path) -> None:
    receipt = run([PY, "check.py"], cwd=repo, key=KEY, stream=False)
    (repo / "pyproject.toml").write_text(f'[tool.letitloop]\nprotect = ["{CHARGE}"]\n')
    result = verify(receipt, key=KEY, cwd=repo)
    assert result.failed_names == [f"protected:{CHARGE}"]
    assert result.check(f"protected:{CHARGE}").found == "absent"  # type: ignore[union-attr]
    # and a receipt made now records it from pyproject.toml on its own
    assert CHARGE in run([PY, "check.py"], cwd=repo, key=KEY, stream=False).protected
