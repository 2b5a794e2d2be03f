"""The matrix's steps, shared by the three backends' test modules: every surface reads the
scenario as operate does; every surface takes every action it offers, reporting operate's
outcome (a refused resume refused with operate's cause); what one surface did shows on the
others; and afterwards every surface still reads the journal as operate does.

On memory only the in-process surfaces apply: no other process can see a journal that lives
in this process's memory (the CLI, the lab's server, ``lil mcp`` and ``lil lsp`` run in
processes of their own).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from tests.matrix import cli, inproc, lsp, mcp, nb, rest, tui
from tests.matrix.acts import ACTIONS, Targets, op_acts
from tests.matrix.build import Scenario
from tests.matrix.reading import MATRIX, check
from tests.matrix.truth import check_truth, read_truth, same

IN_PROCESS_ACTORS = (
    "notebook",
    "lil-tui",
    "splicer",
)  # the surfaces that act on a memory journal (and operate)
# runs the CLI shows in full (one process each): one of every kind in the scenario
BASE = [
    "flows.ok:a",
    "flows.broken:b",
    "flows.slow:d",
    "flows.halted:g",
    "flows.effect:c-base",
    "flows.asks:e-base",
    "flows.ok:a~base",
    "lil.task:write",
    "flows.dead:f-cli",
]
# after the actions: runs other surfaces acted on (approved and resumed, rejected, cancelled and
# reset, retried and budgeted, forked, resolved)
ACTED = [
    "flows.asks:e-rest",
    "flows.asks:e-no-op",
    "flows.dead:f-mcp",
    "flows.ok:a~mcp",
    "flows.effect:c-op",
    "flows.asks:e-no-mcp",
]
# on memory, where only in-process surfaces act
ACTED_IN_PROCESS = [
    "flows.asks:e-op",
    "flows.asks:e-no-op",
    "flows.dead:f-op",
    "flows.ok:a~op",
    "flows.effect:c-nb",
]
# (surface, action): the surface's own sentence, not operate's, by design, and how it starts:
# lil approvals names the approval it decided by its id ("approved 3fa9c1d2 ('send' of RUN)");
# a notebook widget says who decided, and when, beside its buttons
OWN_WORDS = {
    ("cli", "approve"): "approved ",
    ("cli", "reject"): "rejected ",
    ("notebook", "approve"): "approved by <by> at ",
    ("notebook", "reject"): "rejected by <by> at ",
    ("notebook", "retry"): "retried by <by>: run failed",
}
OUTCOMES: dict[tuple[str, str], dict[str, str]] = {}  # (backend, surface) -> action -> sentence


async def in_process(s: Scenario, shown: list[str]) -> None:
    """operate agrees with itself; the splicer, the task runner, the notebook widgets and
    lil-tui read what operate reads (``shown``: the runs lil-tui opens on their own screen)."""
    truth = read_truth(s.journal)
    check_truth(truth)
    MATRIX.setdefault(("operate", s.backend), set()).update({"runs", "views", "truth"})
    with all_of() as each:
        each(lambda: check("splicer", s.backend, inproc.splicer(s.journal), truth))
        each(lambda: check("task runner", s.backend, inproc.task_runner(s.journal), truth))
        texts = nb.expected_texts(truth, truth.ids)
        each(
            lambda: check("notebook", s.backend, nb.read(s.journal, truth.ids), truth, texts=texts)
        )
        said = await tui.read(s.journal, truth.ids, shown)
        shows = tui.expected_texts(truth, shown)
        each(lambda: check("lil-tui", s.backend, said, truth, texts=shows))
        if s.backend != "memory":
            found = "splicer, task runner (journal found)"
            each(lambda: check(found, s.backend, inproc.by_default(s), truth))


async def processes(s: Scenario, server: rest.Rest, shown: list[str]) -> None:
    """The CLI, the lab's API and ``lil mcp`` read what operate reads."""
    truth = read_truth(s.journal)
    texts = cli.expected_texts(truth, shown)
    waiting = {"waiting": len(truth.approvals)}
    async with mcp.session(s) as client:
        said = await mcp.read(client, truth.ids)
    editor = await lsp.read(s)
    with all_of() as each:
        each(lambda: check("lsp", s.backend, editor, truth, texts=lsp.expected_texts(s, truth)))
        each(lambda: check("cli", s.backend, cli.read(s, shown), truth, texts=texts))
        each(lambda: check("rest", s.backend, rest.read(server, truth.ids), truth, texts=waiting))
        each(lambda: check("mcp", s.backend, said, truth, adapt=mcp.adapt))
    assert read_truth(s.journal) == truth, "the journal changed while the surfaces read it"


def compare_outcomes(
    s: Scenario, surface: str, said: dict[str, str], acted: list[str] | None = None
) -> None:
    """Each action's sentence is operate's (normalized: its own runs, name and ids); every
    action that differs is named. ``acted``: the actions taken, when only some said a
    sentence to compare (lil lsp answers with data, and says only a refusal in words)."""
    expected = OUTCOMES[(s.backend, "op")]
    OUTCOMES[(s.backend, surface)] = said
    taken = ", ".join(acted or sorted(said))
    MATRIX.setdefault((surface, s.backend), set()).add(f"acts: {taken}")
    with all_of() as each:
        for action, sentence in said.items():
            assert action in ACTIONS, action
            if (surface, action) in OWN_WORDS:
                start = OWN_WORDS[(surface, action)]
                each(partial(_starts, surface, sentence, start))
                continue
            each(partial(same, surface, f"the outcome of {action}", expected[action], sentence))


def _starts(surface: str, sentence: str, words: str) -> None:
    assert sentence.startswith(words), f"{surface} says {sentence!r}, not {words!r}..."


async def actions(s: Scenario, server: rest.Rest | None) -> None:
    """Each surface takes the actions it offers, then another surface shows what it did (one
    surface failing does not stop the others: every disagreement is reported at the end)."""
    OUTCOMES[(s.backend, "op")] = op_acts(s)
    MATRIX.setdefault(("operate", s.backend), set()).add(f"acts: {', '.join(sorted(ACTIONS))}")
    failed: list[str] = []
    for surface in ("notebook", "lil-tui", "splicer", "cli", "rest", "mcp", "lsp"):
        if server is None and surface not in IN_PROCESS_ACTORS:
            continue
        try:
            await _act(s, surface, server)
        except AssertionError as exc:
            failed.append(f"{surface}: {exc}")
    assert not failed, "\n\n".join(failed)


async def _act(s: Scenario, surface: str, server: rest.Rest | None) -> None:
    if surface == "notebook":
        compare_outcomes(s, "notebook", nb.acts(s))
    elif surface == "lil-tui":
        compare_outcomes(s, "lil-tui", await tui.acts(s))
    elif surface == "splicer":  # its API answers with data, not a sentence: expect() checks it
        did = inproc.splicer_acts(s)
        MATRIX.setdefault(("splicer", s.backend), set()).add(f"acts: {', '.join(sorted(did))}")
    elif surface == "cli":
        assert server is not None
        compare_outcomes(s, "cli", cli.acts(s))
        # resolved from the CLI: the lab's list of side effects in doubt no longer has it
        effects = server.get("effects")["effects"]
        assert Targets("cli").effect not in {e["run_id"] for e in effects}
        assert {e["run_id"] for e in effects} == {d.run_id for d in _doubts(s)}
    elif surface == "rest":
        assert server is not None
        compare_outcomes(s, "rest", rest.acts(s, server))
        # approved in the lab: the CLI names the lab's user as the one who decided
        t = Targets("rest")
        [decided] = cli.lil_json(s, "approvals", "list", "--all", "--run", t.approve)
        assert (decided["status"], decided["decided_by"]) == ("approved", server.by)
    elif surface == "lsp":
        said = await lsp.acts(s)
        for action, answer in said.items():
            if action != "refused resume":
                assert "error" not in answer, (action, answer)
        error = said["refused resume"].get("error") or {}
        refused = f"error: {error.get('message')}\n  fix: {error.get('fix')}"
        compare_outcomes(s, "lsp", {"refused resume": refused}, acted=sorted(said))
    else:
        assert server is not None
        async with mcp.session(s) as client:
            compare_outcomes(s, "mcp", await mcp.acts(s, client))
        # a budget raised by an agent: `lil runs show` says what it is now and who set it
        shown = s.lil("runs", "show", Targets("mcp").dead).stdout
        assert re.search(r"^budget\s+\$2\.00$", shown, re.M), shown
        assert f"budget set to $2 by {mcp.BY}" in shown, shown
        view = server.get(f"runs/{Targets('mcp').dead}")
        assert view["run"]["budget"] == {"usd_micros": 2_000_000, "tokens": None}


@contextmanager
def all_of() -> Iterator[Callable[[Callable[[], None]], None]]:
    """Run every check given to ``each`` and fail once, with every disagreement found (one
    surface's disagreement does not hide another's)."""
    failed: list[str] = []

    def each(check: Callable[[], None]) -> None:
        try:
            check()
        except AssertionError as exc:
            failed.append(str(exc))

    yield each
    if failed:
        raise AssertionError("\n\n".join(failed))


def _doubts(s: Scenario) -> list[Any]:
    from letitloop import operate

    return operate.doubts(s.journal)


def report() -> str:
    """The matrix as compared so far, for the test's output."""
    rows = [
        f"{surface} on {backend}: {', '.join(sorted(parts))}"
        for (surface, backend), parts in sorted(MATRIX.items())
    ]
    return (
        "\n".join(rows)
        + "\n"
        + json.dumps({f"{b}/{s}": o for (b, s), o in OUTCOMES.items()}, indent=1)
    )
