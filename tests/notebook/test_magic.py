"""``%%durable`` in an in-process IPython shell, against a real journal and owner process."""

from __future__ import annotations

from typing import Any

from letitloop import open_journal
from letitloop.errors import NonDeterminismError

CELL = """
a = step("a", lambda: calls.append("a") or 1)
b = step("{b}", lambda: calls.append("{b}") or a + {inc})
c = step("c", lambda: calls.append("c") or b * 10)
c
"""


def body(b: str = "b", inc: int = 1) -> str:
    return CELL.format(b=b, inc=inc)


def test_names_come_back_without_running_steps_again(cells: Any, shell: Any) -> None:
    first = cells.run("ingest", body())
    assert first.success and shell.user_ns["c"] == 20
    assert "ingest: 3/3 steps" in first.captured.stdout
    for name in ("a", "b", "c"):
        del shell.user_ns[name]  # as after a kernel restart
    again = cells.run("ingest", body())
    assert again.success and (shell.user_ns["a"], shell.user_ns["b"], shell.user_ns["c"]) == (
        1,
        2,
        20,
    )
    assert cells.calls == ["a", "b", "c"]  # replayed, not run again
    assert "3 replayed" in again.captured.stdout
    assert "Out" in again.captured.stdout and "20" in again.captured.stdout  # the cell's value


def test_an_edited_cell_reruns_from_its_first_changed_step(cells: Any, shell: Any) -> None:
    cells.run("edit", body())
    edited = cells.run("edit", body(b="b2", inc=5))
    assert edited.success and shell.user_ns["c"] == 60
    assert cells.calls == ["a", "b", "c", "b2", "c"]  # a kept; b2 and c run (c depends on it)
    journal = open_journal(cells.journal_path)
    run_id = journal.find_run("cell.edit:")
    statuses = [(x.name, x.status) for x in journal.get_run(run_id).attempts]
    assert ("b", "superseded") in statuses and ("b2", "completed") in statuses
    same_args = cells.run("edit", body(b="b2", inc=5).replace("b * 10", "b * 100"))
    assert same_args.success and shell.user_ns["c"] == 600  # an edited step function reruns
    assert cells.calls == ["a", "b", "c", "b2", "c", "c"]


def test_fresh_starts_over(cells: Any, shell: Any) -> None:
    cells.run("again", body())
    fresh = cells.run("again --fresh", body())
    assert fresh.success and cells.calls == ["a", "b", "c", "a", "b", "c"]
    journal = open_journal(cells.journal_path)
    assert journal.get_run(journal.find_run("cell.again:")).run.epoch == 1


def test_strict_makes_a_change_an_error(cells: Any) -> None:
    first = cells.run("strict", body())
    assert first.success, first.error_in_exec
    changed = cells.run("strict --strict", body(b="other"))
    assert not changed.success
    assert isinstance(changed.error_in_exec, NonDeterminismError)
    assert "without --strict" in changed.error_in_exec.fix
    assert cells.calls == ["a", "b", "c", "a"] or cells.calls == ["a", "b", "c"]


def test_usage_errors_are_clear(cells: Any) -> None:
    unknown = cells.run("x --bogus", "y = 1")
    assert not unknown.success and "unrecognized arguments: --bogus" in str(unknown.error_in_exec)
    bad = cells.run("not-a-name", "y = 1")
    assert not bad.success and "must be an identifier" in str(bad.error_in_exec)


def test_budget_and_run_id_options(cells: Any, shell: Any) -> None:
    code = (
        "from letitloop import record_cost\n"
        "v = step('paid', lambda: record_cost(usd=0.01) or 7, estimate=0.01)"
    )
    result = cells.run("paid --run-id fixed --budget-usd 0.5", code)
    assert result.success and shell.user_ns["v"] == 7
    info = open_journal(cells.journal_path).get_run("cell.paid:fixed").run
    assert info.status == "completed" and info.cost_micros == 10_000


def test_a_failing_cell_fails_its_run_and_resumes_at_the_failed_step(
    cells: Any, shell: Any
) -> None:
    shell.user_ns["boom"] = [True]
    code = (
        "a = step('a', lambda: calls.append('a') or 1)\n"
        "def f():\n    calls.append('f')\n    if boom[0]:\n"
        "        raise ValueError('flaky')\n    return 2\n"
        "b = step('f', f)"
    )
    failed = cells.run("flaky", code)
    assert isinstance(failed.error_in_exec, ValueError)
    shell.user_ns["boom"][0] = False
    ok = cells.run("flaky", code)
    assert ok.success and shell.user_ns["b"] == 2 and cells.calls == ["a", "f", "f"]


def test_step_code_digest_is_stable_across_cell_runs_and_sees_edits() -> None:
    from letitloop.kernel._steps import code_digest

    def compiled(src: str, filename: str) -> Any:
        namespace: dict[str, Any] = {}
        exec(compile(src, filename, "exec"), namespace)
        return namespace["f"]

    src = "f = lambda: [x * 2 for x in range(3)]"
    assert code_digest(compiled(src, "<cell-1>")) == code_digest(compiled(src, "<cell-2>"))
    assert code_digest(compiled(src.replace("2", "3"), "<cell-1>")) != code_digest(
        compiled(src, "<cell-1>")
    )
    assert code_digest(len) == ""  # builtins have no code: the arguments decide alone


def test_progress_updates_in_place_at_most_a_few_times_a_second(shell: Any) -> None:
    from types import SimpleNamespace

    from letitloop.notebook_ext._progress import Progress

    now = [100.0]
    progress = Progress("loop", shell, clock=lambda: now[0], live=True)
    shown: list[str] = []
    progress._show = lambda: shown.append(progress.text())  # type: ignore[method-assign]
    ctx = SimpleNamespace(recorded={i: None for i in range(10)}, spent_micros=2_500)
    for i in range(500):  # 500 steps over 5 seconds
        now[0] += 0.01
        progress.observe(ctx, i, f"item-{i}", "replayed" if i < 10 else "completed")  # type: ignore[arg-type]
    progress.finish()
    assert 15 <= len(shown) <= 25  # ~4 per second, not 500
    assert shown[-1] == "loop: 500/500 steps · 10 replayed · last: item-499 · 5.0s · $0.0025"
