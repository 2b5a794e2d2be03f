"""The in-process surfaces that are not a front end: the splicer's proposals API
(``letitloop.splice``) and the task runner's (``letitloop.tasks``), given the journal or, in a
fresh process, finding it from ``LIL_JOURNAL`` as a user's script does."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.matrix.build import Scenario
from tests.matrix.reading import Reading

# a user's script: the splicer and the task runner on the journal they find themselves
DEFAULT_JOURNAL = """
import json
from letitloop import operate
from letitloop.journal import open_journal
from letitloop.splice import list_proposals
from letitloop.tasks import task_runs
print(json.dumps({
    "proposals": [operate.proposal_json(p) for p in list_proposals()],
    "tasks": task_runs(open_journal()),
}))
"""


def splicer(journal: Any) -> Reading:
    from letitloop import operate
    from letitloop.splice import list_proposals

    return Reading(proposals=[operate.proposal_json(p) for p in list_proposals(journal=journal)])


def task_runner(journal: Any) -> Reading:
    from letitloop.tasks import task_detail, task_runs

    rows = task_runs(journal)
    detail = {row["run_id"]: task_detail(journal, row["task"]) for row in rows}
    for row in rows:  # a task shown in full says what its row says
        d = detail[row["run_id"]]
        assert (d["status"], d.get("shown", {}).get("steps")) == (
            row["status"],
            row.get("shown", {}).get("steps"),
        ), (d, row)
    return Reading(tasks=rows)


def by_default(s: Scenario) -> Reading:
    """The splicer and the task runner in a fresh process that names no journal."""
    done = subprocess.run(
        [sys.executable, "-c", DEFAULT_JOURNAL],
        cwd=s.project,
        env=s.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout)
    return Reading(proposals=said["proposals"], tasks=said["tasks"])


def splicer_acts(s: Scenario) -> set[str]:
    """The splicer's own API decides the two proposals on ``apps/splicer.py``, as a script
    does (no ``by``: the API names the user): one applied (the file now holds its code), one
    rejected; the actions taken."""
    from letitloop.journal import who
    from letitloop.splice import apply_proposal, reject_proposal
    from tests.matrix.acts import Targets, expect

    t = Targets("splicer")
    applied = apply_proposal(t.proposal(s, "greet"), journal=s.journal)
    assert applied.changed == ("greet",), applied.changed
    assert (s.project / "apps" / "splicer.py").read_text() == applied.source
    rejected = reject_proposal(t.proposal(s, "bye"), journal=s.journal)
    assert rejected.state == "rejected", rejected
    did = {"apply", "reject splice"}
    expect(s, "splicer", who(), did)
    return did
