"""A ``%%durable`` cell in a real Jupyter kernel, killed mid-loop and re-run in a new kernel."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from tests.helpers import run_lil, wait_until

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LOOP = (
    "%%durable loop --run-id kill-test\n"
    "from nb_helpers import work\n"
    "squares = [step(f'item-{i}', work, i) for i in range(30)]\n"
    "print('TOTAL', sum(squares), len(squares))\n"
)


def notebook() -> Any:
    return new_notebook(
        cells=[new_code_cell("%load_ext letitloop"), new_code_cell(LOOP)],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )


@pytest.fixture
def kernel_env(monkeypatch: pytest.MonkeyPatch, journal_path: Path, tmp_path: Path) -> Path:
    side = tmp_path / "side-effects.txt"
    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    monkeypatch.setenv("NB_SIDE_EFFECTS", str(side))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(HERE)]))
    return side


def lines(path: Path) -> list[tuple[int, int]]:
    if not path.exists():
        return []
    return [tuple(map(int, line.split())) for line in path.read_text().splitlines()]  # type: ignore[misc]


def test_cell_killed_mid_loop_resumes_in_a_new_kernel(kernel_env: Path, tmp_path: Path) -> None:
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        kc.execute("%load_ext letitloop")
        kc.execute(LOOP)
        wait_until(lambda: len(lines(kernel_env)) >= 8, 60, what="8 steps", interval=0.02)
        first_pid = km.provisioner.process.pid  # type: ignore[union-attr]
        os.kill(first_pid, signal.SIGKILL)  # the kernel dies as with the OOM killer
        km.provisioner.process.wait()  # type: ignore[union-attr]
    finally:
        kc.stop_channels()
        km.cleanup_resources()
    done_before = len(lines(kernel_env))
    assert 8 <= done_before < 30

    nb = notebook()
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    out = "".join(o.get("text", "") for o in nb.cells[1].outputs if o.output_type == "stream")
    assert f"TOTAL {sum(i * i for i in range(30))} 30" in out  # the cell's variables are right
    runs = lines(kernel_env)
    per_item = {i: sum(1 for j, _ in runs if j == i) for i in range(30)}
    assert set(per_item.values()) <= {1, 2} and sum(per_item.values()) <= 31
    twice = [i for i, n in per_item.items() if n == 2]
    assert len(twice) <= 1 and all(i == done_before - 1 for i in twice)  # only the one in flight
    pids = {pid for _, pid in runs}
    assert first_pid in pids and len(pids) == 2
    nbformat.write(nb, tmp_path / "executed.ipynb")


EXAMPLES = sorted((ROOT / "examples").glob("*/*.ipynb"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_notebooks_run(path: Path, kernel_env: Path, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    nbformat.write(nb, tmp_path / path.name)


def test_there_are_example_notebooks() -> None:
    assert EXAMPLES


def test_a_decision_from_the_cli_continues_the_cell_in_its_kernel(
    kernel_env: Path, journal_path: Path, tmp_path: Path
) -> None:

    from letitloop import open_journal

    cell = (
        "%%durable ask --run-id elsewhere\n"
        "d = step('draft', lambda: {'n': 1})\n"
        "decision = approval('ship', d)\n"
        "step('ship', lambda: open(__import__('os').environ['NB_SIDE_EFFECTS'], 'a')"
        ".write('shipped\\n'))\n"
    )
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        kc.execute_interactive("%load_ext letitloop", timeout=60)
        reply = kc.execute_interactive(cell, timeout=60)
        assert reply["content"]["status"] == "ok"
        journal = open_journal(journal_path)
        pending = journal.approvals(status="pending")
        assert len(pending) == 1 and not kernel_env.exists()
        cli = run_lil("approvals", "approve", pending[0].id, journal=journal_path, timeout=60)
        assert cli.returncode == 0, cli.stderr
        # the widget hears the journal and resumes the run
        wait_until(kernel_env.exists, 30, what="the resumed run to ship")
        assert kernel_env.read_text() == "shipped\n"
        run = journal.get_run(journal.find_run("cell.ask:elsewhere")).run
        assert run.status == "completed"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_supervise_from_a_notebook_kernel(
    kernel_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``@supervise`` on an importable function, called from a notebook: the child is SIGKILLed
    once and restarted, and the cell gets the value."""
    log = tmp_path / "steps.log"
    monkeypatch.setenv("HUMAN_LOG", str(log))
    human = ROOT / "tests" / "human"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(HERE), str(human)]))
    nb = new_notebook(
        cells=[
            new_code_cell(
                "import os, supervised\nr = supervised.crunch(4)\n"
                "print('R', r['total'], r['child'] != os.getpid())"
            )
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    out = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.output_type == "stream")
    assert "R 6 True" in out
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["s0", "s1", "s2", "s3"]
