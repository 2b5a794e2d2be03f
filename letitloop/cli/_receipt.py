"""``lil receipt``: sign what a test command really did, verify it, and guard signatures.

Thin over ``letitloop.receipts``: ``run`` wraps ``receipts.run`` (and exits with the command's
own exit code, so CI still fails on failing tests), ``verify`` wraps ``receipts.verify`` (exit 1
when any check fails, each failure named with expected vs found), ``signatures`` wraps
``receipts.signature_changes`` (exit 1 when a protected signature changed). The library, and
with it libcst and cryptography, is imported only when a command runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from letitloop.cli._shared import LilError, json_option
from letitloop.errors import LetItLoopError

FILE = click.Path(dir_okay=False, path_type=Path)
SPEC_HELP = "A protected function as PATH::QUALNAME (path from the repository root); repeatable."


class ReceiptGroup(click.Group):
    """Turns library errors into ``error: ...`` / ``  fix: ...`` also when the group runs on its
    own (``python -m letitloop.receipts``), not only under ``lil``."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LetItLoopError as exc:
            raise LilError.wrap(exc) from None


@click.group(cls=ReceiptGroup)
def receipt() -> None:
    """Sign what really ran in CI, and verify it.

    `run` runs a command (its output streams as usual) and writes a signed receipt: the
    command, its exit code, output digests, test counts, the git commit and the signatures of
    protected functions. `verify` checks the signature with the secret key and that the
    receipt matches the code here. `signatures` compares protected signatures between two
    revisions. The HMAC key comes from $LIL_RECEIPT_KEY or --key-file.

    \b
    Examples:
        lil receipt run --protect src/billing.py::charge -- pytest -q
        lil receipt verify receipt.json
        lil receipt signatures --base origin/main --head HEAD --protect src/api.py::Handler.post
    """


def _exit_status(code: int) -> int:
    """A shell-style status: a command killed by signal N gives 128+N."""
    return 128 - code if code < 0 else min(code, 255)


@receipt.command(
    "run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option("--out", "out", type=FILE, default=Path("receipt.json"), show_default=True)
@click.option("--protect", "protect", multiple=True, metavar="PATH::QUALNAME", help=SPEC_HELP)
@click.option(
    "--junit", type=FILE, help="JUnit XML report the command writes (automatic for pytest)."
)
@click.option("--key-file", type=FILE, help="HMAC secret file (default: $LIL_RECEIPT_KEY).")
@click.option(
    "--signing-key",
    type=FILE,
    help="Ed25519 private key (PEM) for a second signature that a public key can check "
    "(default: $LIL_RECEIPT_SIGNING_KEY).",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def run_cmd(
    ctx: click.Context,
    out: Path,
    protect: tuple[str, ...],
    junit: Path | None,
    key_file: Path | None,
    signing_key: Path | None,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND and write a signed receipt of what happened.

    Put the command after `--`. Exits with the command's own exit code.
    """
    from letitloop.receipts._run import run

    result = run(
        list(command),
        out=out,
        protect=protect,
        junit=junit,
        key_file=key_file,
        signing_key_file=signing_key,
    )
    tests = result.tests
    counts = (
        f", {tests['passed']} passed, {tests['failed']} failed, {tests['errors']} errors, "
        f"{tests['skipped']} skipped"
        if tests
        else ""
    )
    click.echo(
        f"receipt: {out} (exit {result.exit_code}{counts}; "
        f"{len(result.protected)} protected; signed by {', '.join(result.key_ids)})",
        err=True,
    )
    ctx.exit(_exit_status(result.exit_code or 0))


@receipt.command("verify")
@click.argument("receipt_file", metavar="RECEIPT", type=FILE)
@click.option("--rerun", is_flag=True, help="Run the command again here and compare.")
@click.option("--allow-failures", is_flag=True, help="Accept a failed command or failed tests.")
@click.option("--commit", metavar="REV", help="The commit it must be for (default: HEAD).")
@click.option("--protect", "protect", multiple=True, metavar="PATH::QUALNAME", help=SPEC_HELP)
@click.option("--key-file", type=FILE, help="HMAC secret file (default: $LIL_RECEIPT_KEY).")
@click.option(
    "--public-key",
    type=FILE,
    help="Ed25519 public key (PEM) to check instead of, or besides, the HMAC secret.",
)
@json_option
@click.pass_context
def verify_cmd(
    ctx: click.Context,
    receipt_file: Path,
    rerun: bool,
    allow_failures: bool,
    commit: str | None,
    protect: tuple[str, ...],
    key_file: Path | None,
    public_key: Path | None,
    as_json: bool,
) -> None:
    """Check RECEIPT's signature, commit, protected signatures and outcome.

    Exits 0 when every check holds, 1 otherwise (each failed check is named, with what was
    expected and what was found).
    """
    from letitloop.receipts._verify import verify

    result = verify(
        receipt_file,
        key_file=key_file,
        public_key_file=public_key,
        commit=commit,
        protect=protect,
        allow_failures=allow_failures,
        rerun=rerun,
    )
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    else:
        click.echo(result.render())
    ctx.exit(0 if result.ok else 1)


@receipt.command("signatures")
@click.option("--base", required=True, metavar="REV", help="The revision to compare from.")
@click.option("--head", default="HEAD", show_default=True, metavar="REV")
@click.option("--protect", "protect", multiple=True, metavar="PATH::QUALNAME", help=SPEC_HELP)
@click.option(
    "--policy",
    type=click.Choice(["exact", "additive"]),
    help="exact: no change at all; additive: new optional parameters only "
    "(default: [tool.letitloop] protect-policy at BASE, else exact).",
)
@json_option
@click.pass_context
def signatures_cmd(
    ctx: click.Context,
    base: str,
    head: str,
    protect: tuple[str, ...],
    policy: str | None,
    as_json: bool,
) -> None:
    """Which protected signatures changed between BASE and HEAD, and how.

    Protected functions: --protect plus [tool.letitloop] protect in pyproject.toml at both
    revisions. Exits 1 if any changed beyond the policy (or was removed).
    """
    from letitloop.receipts._signatures import signature_changes

    changes = signature_changes(base, head, protect, policy=policy)
    bad = [c for c in changes if c.violation]
    if as_json:
        data = {"ok": not bad, "changes": [c.to_dict() for c in changes]}
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        for change in changes:
            mark = "FAIL" if change.violation else "ok  "
            click.echo(f"{mark} {change.spec}: {change.status}")
            if change.status not in ("unchanged", "new"):
                click.echo(f"       base: {change.old or '(missing)'}")
                click.echo(f"       head: {change.new or '(missing)'}")
                for reason in change.reasons:
                    click.echo(f"       - {reason}")
        verdict = (
            f"{len(bad)} protected signature(s) changed" if bad else "protected signatures intact"
        )
        click.echo(verdict)
    ctx.exit(1 if bad else 0)
