"""A fork's run id is its own: a real call never gets a fork's reused steps back.

``lil runs fork … --key bob`` made run ``pay:bob``, the id a later real call ``pay("bob")``
computes; that call then returned the fork's reused steps (computed for ada) and nothing said it
was a fork. Now a fork's key is the source's key, ``~`` and the label, which no call computes; a
fork made before (its records are the same, only its key was free) still replays when resumed,
and a call that computes its id is refused with ``ForkedRunError``. ``lil runs show`` and the
resume's note say a run is a fork and of what. Real processes on a real DuckDB journal (its owner
process); the namespace and the refusal also on memory and PostgreSQL journals, in process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from letitloop import durable, fork_run, run_fork, step
from letitloop.errors import ForkedRunError
from letitloop.journal._contract import Journal
from letitloop.journal._fork import fork_records, plan_fork
from letitloop.kernel._entry import sign_entry, verify_entry
from letitloop.kernel._runtime import codec_for
from tests.helpers import Lil, child_env

HERE = Path(__file__).resolve().parent


def old_fork(journal: Journal, source: str, position: int, key: str, args: Any) -> str:
    """A fork as ``fork_run`` made it before forks had keys of their own: the same records
    (``fork_records``), under any key the caller chose."""
    plan = plan_fork(journal, source, position)
    codec = codec_for(journal)
    encoded = codec.encode([list(args), {}], what="arguments")
    run_id = f"{plan.workflow}:{key}"
    entry = None
    if plan.entry is not None:
        verified = verify_entry(codec, source, plan.workflow, plan.entry, plan.args)
        entry = sign_entry(codec, run_id, plan.workflow, verified, encoded)
    records = fork_records(
        journal, plan, run_id=run_id, key=key, args=encoded, entry=entry, by="old@lil"
    )
    journal.import_records(records)
    return run_id


@pytest.fixture
def env(journal_path: Path, tmp_path: Path) -> dict[str, str]:
    return child_env(journal_path, pythonpath=[HERE], FORK_CALLS=str(tmp_path / "calls.txt"))


def run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, cwd=HERE, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def lil(env: dict[str, str]) -> Lil:
    """The installed ``lil`` in this folder, on the test's journal."""
    return Lil(env, HERE, timeout=300, script=True)


def pay(env: dict[str, str], customer: str) -> subprocess.CompletedProcess[str]:
    code = f"import json, fork_workflows as w; print(json.dumps(w.pay({customer!r})))"
    return run(env, sys.executable, "-c", code)


def calls(env: dict[str, str]) -> list[str]:
    path = Path(env["FORK_CALLS"])
    lines = path.read_text().splitlines() if path.exists() else []
    path.unlink(missing_ok=True)
    return lines


def test_a_fork_labelled_like_a_customer_never_answers_that_customers_call(
    env: dict[str, str], lil: Lil
) -> None:
    assert pay(env, "ada").returncode == 0
    assert calls(env) == ["lookup ada", "charge ada"]
    made = lil.run(
        "runs",
        "fork",
        "fork_workflows.pay:ada",
        "--from",
        "charge",
        "--key",
        "bob",
        "--args",
        '["bob"]',
        "--json",
    )
    assert made.returncode == 0, made.stderr
    fork = json.loads(made.stdout)
    assert fork["run_id"] == "fork_workflows.pay:ada~bob"  # its own namespace

    real = pay(env, "bob")  # the real call for bob: computed for bob, every step run
    assert real.returncode == 0, real.stderr
    lookup, charge = json.loads(real.stdout)
    assert lookup.startswith("lookup:bob:") and charge.startswith("charge:bob:")
    assert calls(env) == ["lookup bob", "charge bob"]

    shown = lil.run("runs", "show", fork["run_id"])
    assert shown.returncode == 0, shown.stderr
    assert "forked from fork_workflows.pay:ada at 'charge' (position 1)" in shown.stdout
    assert "forked from" not in lil.run("runs", "show", "fork_workflows.pay:bob").stdout
    resumed = lil.run("runs", "resume", fork["run_id"], "--json")
    assert resumed.returncode == 0, resumed.stderr
    note = f"note: {fork['run_id']} is a fork of fork_workflows.pay:ada at 'charge'"
    assert note in resumed.stderr  # the resume says whose results it replays
    reused, ran = json.loads(resumed.stdout)["result"]
    assert reused.startswith("lookup:ada:") and ran.startswith("charge:bob:")
    assert calls(env) == ["charge bob"]


def test_a_fork_made_before_still_replays_and_the_call_that_computes_its_id_is_refused(
    env: dict[str, str], lil: Lil, journal_path: Path
) -> None:
    from letitloop.journal.duckdb._client import open_journal

    assert pay(env, "ada").returncode == 0
    calls(env)
    journal = open_journal(journal_path)
    fork_id = old_fork(journal, "fork_workflows.pay:ada", 1, "erin", ["erin"])
    assert fork_id == "fork_workflows.pay:erin"  # the id pay("erin") computes

    real = pay(env, "erin")  # it returned ada's lookup, as if it were erin's
    assert real.returncode != 0 and real.stdout == ""
    assert "ForkedRunError" in real.stderr
    assert "fork_workflows.pay:erin, which is a fork of fork_workflows.pay:ada" in real.stderr
    assert "lil runs resume fork_workflows.pay:erin" in real.stderr  # the fix
    assert calls(env) == []  # nothing ran, nothing was journaled for the refused call
    assert journal.get_run(fork_id).run.status == "suspended"

    resumed = lil.run("runs", "resume", fork_id, "--json")  # the fork itself replays
    assert resumed.returncode == 0, resumed.stderr
    assert f"note: {fork_id} is a fork of fork_workflows.pay:ada" in resumed.stderr
    reused, ran = json.loads(resumed.stdout)["result"]
    assert reused.startswith("lookup:ada:") and ran.startswith("charge:erin:")
    assert calls(env) == ["charge erin"]
    again = pay(env, "erin")  # completed now: still the fork's, still refused
    assert again.returncode != 0 and "ForkedRunError" in again.stderr
    shown = lil.run("runs", "show", fork_id, "--json")
    assert json.loads(shown.stdout)["run"]["forked_from"]["run_id"] == "fork_workflows.pay:ada"


def test_forks_have_keys_no_call_computes_on_every_backend(any_journal: Journal) -> None:
    ran: list[str] = []

    def work(name: str, customer: str) -> str:
        ran.append(f"{name} {customer}")
        return f"{name}:{customer}"

    @durable(journal=any_journal, name="shop.pay", run_id="{customer}")
    def pay_fixed(customer: str) -> list[str]:
        return [step(n, work, n, customer) for n in ("lookup", "charge")]

    @durable(journal=any_journal, name="shop.derived")
    def pay_derived(customer: str) -> list[str]:
        return [step(n, work, n, customer) for n in ("lookup", "charge")]

    pay_fixed("ada"), pay_derived("ada")
    derived = next(r for r in any_journal.list_runs() if r.workflow == "shop.derived")
    pay_derived("bob")
    (bob,) = [
        r
        for r in any_journal.list_runs()
        if r.workflow == "shop.derived" and r.run_id != derived.run_id
    ]
    bob_key = bob.key  # a key a call derived: 16 hex digits, never a "~"
    for source, key in (("shop.pay:ada", "bob"), (derived.run_id, bob_key)):
        fork = fork_run(source, 1, args=["bob"], key=key, journal=any_journal)
        assert fork.run_id.endswith(f"~{key}") and "~" not in source
    ran.clear()
    assert pay_fixed("bob") == ["lookup:bob", "charge:bob"]  # computed for bob
    assert pay_derived("bob") == ["lookup:bob", "charge:bob"]  # its own run, not the fork
    assert ran == ["lookup bob", "charge bob"]

    erin = old_fork(any_journal, "shop.pay:ada", 1, "erin", ["erin"])
    with pytest.raises(ForkedRunError, match=re.escape("is a fork of shop.pay:ada")) as refused:
        pay_fixed("erin")
    assert refused.value.origin == "shop.pay:ada" and refused.value.run_id == erin
    ran.clear()
    assert run_fork(erin, pay_fixed, journal=any_journal) == ["lookup:ada", "charge:erin"]
    assert ran == ["charge erin"]
    with pytest.raises(ForkedRunError):
        pay_fixed("erin")  # completed, and still not this call's
