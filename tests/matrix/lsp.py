"""``lil lsp`` as a surface: the real server (``python -m letitloop.lsp``) under a real
pytest-lsp client with VS Code's capabilities, on the scenario's ``flows.py``.

Read: the runs tree command (``letitloop.runsTree``: every run and approval waiting), each
durable function's hover (its newest runs: status, steps, cost), its code lens (how many runs,
the last one's status, what they all cost) and the journal's diagnostics (LIL101: the last run
failed at this step; LIL103: a side effect of the last run is in doubt). Acts through its
commands, as its code actions and lenses do: approve, reject, resume, fork from a step, apply
a splice proposal (the edit applied to the file as an editor saves it) and reject one, and a
refused resume; it has no command to cancel, reset, retry, budget or resolve."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.lsp_helpers import apply_edit, edits_of, open_doc, pos, start, tdi
from tests.matrix.build import Scenario
from tests.matrix.reading import Reading

FUNCTIONS = ("ok", "broken", "slow", "halted", "effect", "asks", "dead")
HOVER_ROW = re.compile(
    r"^\| `(?P<run>[^`]+)` \| (?P<status>\w+) \| (?P<steps>[\d/]+) \| .*? \| "
    r"(?P<cost>\$[\d,.]+) \|$"
)
LENS = re.compile(r"^lil: (?P<runs>\d+) runs? · last (?P<status>\w+) .* · (?P<cost>\$[\d,.]+)$")
JOURNAL_CODES = ("LIL101", "LIL103")


class _Request:
    param = "visual-studio-code"


@asynccontextmanager
async def client_on(s: Scenario) -> AsyncIterator[LanguageClient]:
    """A started session with ``lil lsp`` on the scenario's journal."""
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "letitloop.lsp", "--journal", s.location],
        server_env=s.env | {"LIL_LSP_DEBOUNCE": "0.02"},
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)  # the factory ClientServerConfig uses by default
    try:
        await start(_Request(), client)
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()  # type: ignore[no-untyped-call]  # pygls's own, untyped


def line_of(source: str, needle: str) -> int:
    return next(n for n, line in enumerate(source.splitlines()) if needle in line)


async def command(client: LanguageClient, name: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))
    )


async def read(s: Scenario) -> Reading:
    """What the editor shows of the scenario's journal."""
    flows = s.project / "flows.py"
    source = flows.read_text()
    async with client_on(s) as client:
        uri = await open_doc(client, flows)
        tree = await command(client, "letitloop.runsTree", 1000)
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=tdi(uri))
        )
        hovers, titles = {}, {}
        for name in FUNCTIONS:
            line = line_of(source, f"def {name}(")
            hover = await client.text_document_hover_async(
                types.HoverParams(text_document=tdi(uri), position=pos(line, 5))
            )
            rows = [] if hover is None else hover.contents.value.splitlines()  # type: ignore[union-attr]
            hovers[name] = [m.groupdict() for m in map(HOVER_ROW.match, rows) if m]
            titles[name] = next(
                (
                    lens.command.title
                    for lens in lenses or []
                    if lens.command is not None
                    and lens.range.start.line == line
                    and lens.command.title.startswith("lil: ")
                ),
                None,
            )
        shown = sorted(
            (d.range.start.line, str(d.code))
            for d in client.diagnostics.get(uri, ())
            if str(d.code) in JOURNAL_CODES
        )
    lens_said = {}
    for name, title in titles.items():
        m = LENS.match(title or "")
        lens_said[name] = m.groupdict() if m else title
    return Reading(
        runs=tree["runs"],
        approvals=tree["approvals"],
        texts={"hovers": hovers, "lenses": lens_said, "journal diagnostics": shown},
    )


def expected_texts(s: Scenario, truth: Any) -> dict[str, Any]:
    """What the hovers, lenses and diagnostics must say, from the truth."""
    from letitloop import operate

    source = (s.project / "flows.py").read_text()
    hovers, lenses, findings = {}, {}, []
    for name in FUNCTIONS:
        runs = [r for r in truth.runs if r["workflow"] == f"flows.{name}"]
        hovers[name] = [
            {
                "run": r["run_id"],
                "status": r["status"],
                "steps": r["shown"]["steps"],
                "cost": r["shown"]["cost"],
            }
            for r in runs[:5]
        ]
        lenses[name] = {
            "runs": str(len(runs)),
            "status": runs[0]["status"],
            "cost": operate.money(sum(r["cost_micros"] for r in runs)),
        }
        last = truth.views[runs[0]["run_id"]]
        if last["run"]["status"] == "failed":
            failed = [a for a in last["attempts"] if a["status"] == "failed" and a["error"]]
            findings.append((line_of(source, f'step("{failed[-1]["name"]}"'), "LIL101"))
        for d in last["effects"]:
            findings.append((line_of(source, f'atomic_marker("{d["marker"]}")'), "LIL103"))
    return {"hovers": hovers, "lenses": lenses, "journal diagnostics": sorted(findings)}


async def acts(s: Scenario) -> dict[str, Any]:
    """The commands its code actions and lenses run; what each answered."""
    from letitloop.journal import who
    from tests.matrix.acts import CANCELLED, COMPLETED, Targets, expect, wait_status

    j, t, by = s.journal, Targets("lsp"), who()
    before = {r.run_id for r in j.list_runs(workflow="flows.ok", limit=1 << 20)}
    app = s.project / "apps" / "lsp.py"
    said: dict[str, Any] = {}
    async with client_on(s) as client:
        uri = await open_doc(client, s.project / "flows.py")
        app_uri = await open_doc(client, app)
        said["approve"] = await command(client, "letitloop.approve", t.approval(j, t.approve))
        said["resume"] = await command(client, "letitloop.resumeRun", t.approve, uri)
        wait_status(j, t.approve, "completed")
        said["reject"] = await command(client, "letitloop.reject", t.approval(j, t.reject))
        said["fork"] = await command(client, "letitloop.forkRun", COMPLETED, 1, uri)
        greet = t.proposal(s, "greet")
        said["apply"] = await command(client, "letitloop.proposal.apply", greet, app_uri)
        [edit] = client.applied_edits  # type: ignore[attr-defined]
        app.write_text(apply_edit(client, app.read_text(), edits_of(edit.edit, app_uri)))
        said["reject splice"] = await command(
            client, "letitloop.proposal.reject", t.proposal(s, "bye")
        )
        said["refused resume"] = await command(client, "letitloop.resumeRun", CANCELLED, uri)
    [fork] = {r.run_id for r in j.list_runs(workflow="flows.ok", limit=1 << 20)} - before
    if said["fork"].get("pid"):  # the lens runs the fork it made: let it finish first
        wait_status(j, fork, "completed")
    expect(s, "lsp", by, {"approve", "resume", "reject", "fork", "apply", "reject splice"}, fork)
    return said
