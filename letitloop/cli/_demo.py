"""``lil demo``: write a small durable pipeline, SIGKILL it mid-run, resume it, tell the story.

Everything is real: the pipeline is a script run with this Python in a subprocess, killed with
SIGKILL once a few steps are journaled, then run again against the same journal. The demo
succeeds (exit 0) only if no side effect happened twice, exactly one notification was sent and
the result equals what an uninterrupted run returns.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import click

from letitloop.cli import _demo_script as script, _output as out
from letitloop.cli._shared import LilError, json_option

WATCH_TIMEOUT = 60.0


class Demo:
    def __init__(self, directory: Path | None, steps: int, seed: int, quiet: bool) -> None:
        self.steps, self.seed, self.quiet = steps, seed, quiet
        self.dir = (directory or Path(tempfile.mkdtemp(prefix="lil-demo-"))).resolve()
        self.script = self.dir / script.SCRIPT_NAME
        self.step_log = self.dir / script.STEP_LOG
        self.sent = self.dir / script.NOTIFICATIONS
        self.journal_file = self.dir / script.JOURNAL_DIR / "journal.duckdb"
        self.run_id = f"{script.WORKFLOW}:{script.run_key(steps, seed)}"
        self.kill_after = min(steps - 1, max(1, steps // 3 + 1))
        self.story: dict[str, Any] = {"dir": str(self.dir), "run_id": self.run_id, "steps": steps}

    def say(self, *parts: Any) -> None:
        """Each part on its own line (nothing in --json mode)."""
        if not self.quiet:
            out.say(*parts, sep="\n")

    def ran(self, name: str) -> None:
        line = out.text("  ✓ ", "green")
        line.append(f"{name} ran")
        self.say(line)

    # -- set up -------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Write the script into a clean workspace (removing only a previous demo's files)."""
        from letitloop.journal.duckdb._client import stop_owner

        self.dir.mkdir(parents=True, exist_ok=True)
        journal_dir = self.journal_file.parent
        if journal_dir.exists():
            stop_owner(self.journal_file)
            foreign = [p.name for p in journal_dir.iterdir() if not p.name.startswith("journal.")]
            if foreign:
                raise LilError(
                    f"{journal_dir} holds files the demo did not write: {', '.join(foreign)}",
                    fix="pass --dir with an empty or previous demo directory",
                )
            shutil.rmtree(journal_dir)
        for path in (self.step_log, self.sent):
            path.unlink(missing_ok=True)
        self.script.write_text(script.render(self.steps, self.seed), encoding="utf-8")
        self.env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        self.env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [package_root, os.environ.get("PYTHONPATH")])
        )
        self.env["LIL_KEY_DIR"] = str(self.dir / "keys")  # the throwaway journal's key stays here

    def python(self, *args: str, **kwargs: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, str(self.script), *args],
            cwd=self.dir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kwargs,
        )

    def lines(self, path: Path) -> list[str]:
        try:
            return path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []

    # -- the two runs -------------------------------------------------------------------------

    def first_run(self, journal: Any) -> None:
        """Run the pipeline and SIGKILL it once ``kill_after`` steps are journaled.

        It is killed only at a moment when every step whose side effect was written is also
        journaled: the next step is then inside its 50-100 ms model call, which is where a crash
        really hurts. To find that moment even on a busy machine, the pipeline is frozen
        (SIGSTOP) while the journal and its side effects are compared, and let go (SIGCONT)
        when they differ.
        """
        proc = self.python()
        self.say(out.text(f"Run 1: python {script.SCRIPT_NAME}  (pid {proc.pid})", "bold"))
        seen = 0
        deadline = time.monotonic() + WATCH_TIMEOUT
        while True:
            frozen = seen >= self.kill_after and proc.poll() is None
            if frozen:
                os.kill(proc.pid, signal.SIGSTOP)
            done = self._done(journal) if frozen else -1
            lines = self.lines(self.step_log)
            for line in lines[seen:]:
                self.ran(line.split()[0])
            seen = len(lines)
            if done >= self.kill_after and done == seen:
                os.kill(proc.pid, signal.SIGKILL)
                break
            if frozen:
                os.kill(proc.pid, signal.SIGCONT)
            if proc.poll() is not None:
                self._abandon(proc, "the pipeline ended before it could be killed")
            if time.monotonic() > deadline:
                self._abandon(proc, "no moment to kill it came (is the machine overloaded?)")
            time.sleep(0.002)
        proc.communicate()
        self.story["killed_after_lines"] = len(self.lines(self.step_log))

    def _done(self, journal: Any) -> int:
        from letitloop.errors import LetItLoopError

        try:
            return int(journal.get_run(self.run_id).run.steps_done)
        except LetItLoopError:
            return 0  # the run is not journaled yet

    def _abandon(self, proc: subprocess.Popen[str], why: str) -> None:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
        tail = "\n".join(err.strip().splitlines()[-10:])
        raise LilError(f"demo run 1 failed: {why}" + (f"\n{tail}" if tail else ""))

    def after_kill(self, journal: Any) -> None:
        """Show what the journal holds once the owner noticed the killed process is gone."""
        from letitloop.cli._runs import attempts_table

        deadline = time.monotonic() + 10
        detail = journal.get_run(self.run_id)
        while detail.run.status == "running" and time.monotonic() < deadline:
            time.sleep(0.01)
            detail = journal.get_run(self.run_id)
        steps = [a for a in detail.attempts if a.kind == "step"]
        self.done_before = [a.name for a in steps if a.status == "completed"]
        self.in_flight = [a.name for a in steps if a.status == "started"]
        flying = f" while {self.in_flight[0]} was running" if self.in_flight else ""
        self.say(out.text(f"  ✗ killed with SIGKILL{flying}", "bold red"), "")
        held = f"{detail.run.status}, {detail.run.steps_done} steps done"
        self.say(out.text(f"The journal now holds (run {self.run_id}: {held}):", "bold"))
        self.say(attempts_table(detail.attempts), "")
        self.story.update(status_after_kill=detail.run.status, done_before=self.done_before)
        self.story["in_flight"] = self.in_flight

    def second_run(self) -> dict[str, Any] | None:
        before = len(self.lines(self.step_log))
        self.say(
            out.text(f"Run 2: python {script.SCRIPT_NAME}  (same command, same journal)", "bold")
        )
        t0 = time.perf_counter()
        proc = self.python()
        stdout, stderr = proc.communicate(timeout=300)
        self.story["resume_seconds"] = round(time.perf_counter() - t0, 3)
        self.new_lines = [line.split()[0] for line in self.lines(self.step_log)[before:]]
        for name in self.new_lines:
            self.ran(name)
        if proc.returncode != 0:
            self.say(out.text(f"  ✗ exited with code {proc.returncode}", "bold red"))
            self.say(out.text(stderr.strip()[-2000:], "red"))
            return None
        self.say(out.text(f"  finished in {self.story['resume_seconds']:.2f} s", "green"), "")
        return dict(json.loads(stdout.strip().splitlines()[-1]))

    # -- the verdict --------------------------------------------------------------------------

    def verdict(
        self, result: dict[str, Any] | None, expected: dict[str, Any], journal: Any
    ) -> bool:
        counts = Counter(line.split()[0] for line in self.lines(self.step_log))
        duplicates = sorted(name for name, n in counts.items() if n > 1)
        replayed = [n for n in self.done_before if n not in self.new_lines]
        rerun = [n for n in self.new_lines if n in self.in_flight or n in self.done_before]
        fresh = [n for n in self.new_lines if n not in rerun]
        notifications = len(self.lines(self.sent))
        final = journal.get_run(self.run_id).run.status
        matches = result == expected["result"]
        self.story.update(
            replayed=replayed,
            re_executed=rerun,
            executed_first_time=fresh,
            notifications_sent=notifications,
            duplicated_side_effects=duplicates,
            final_status=final,
            result=result,
            result_matches_uninterrupted_run=matches,
        )
        ok = not duplicates and notifications == 1 and matches and final == "completed"
        ok = ok and len(replayed) == len(self.done_before) and sum(counts.values()) == self.steps
        self.story["ok"] = ok
        digest = result["digest"] if result else "-"
        dup_note = f" ({', '.join(duplicates)})" if duplicates else ""
        rerun_note = f" ({', '.join(rerun)}: in flight when killed)" if rerun else ""
        resume = self.story["resume_seconds"]
        delays = expected["model_seconds"]
        model = sum(delays[name] for name in self.new_lines if name in delays)
        full = sum(delays.values())
        same = "matches" if matches else "DIFFERS FROM"
        self.say(out.text("The story", "bold"))
        rows = [
            ("steps done before the kill", str(len(self.done_before))),
            ("replayed from the journal", f"{len(replayed)} (journaled output returned, not run)"),
            ("re-executed", f"{len(rerun)}{rerun_note}"),
            ("executed for the first time", str(len(fresh))),
            ("notifications sent", str(notifications)),
            ("duplicated side effects", f"{len(duplicates)}{dup_note}"),
            (
                "resume time",
                f"{resume:.2f} s, {model:.2f} s of it in model calls ({full:.2f} s for a full run)",
            ),
            ("final result", f"digest {digest} ({same} an uninterrupted run)"),
        ]
        self.say(out.kv_table(rows), "")
        if ok:
            verdict = "✓ zero duplicated side effects; the result matches an uninterrupted run"
            self.say(out.text(verdict, "bold green"))
        else:
            verdict = "✗ the resumed run did not match an uninterrupted one (see above)"
            self.say(out.text(verdict, "bold red"))
        inspect = f"lil --journal {self.journal_file} runs show {self.run_id}"
        self.say(out.text(f"files: {self.dir}  (inspect: {inspect})", "dim"))
        return ok

    def run(self) -> bool:
        from letitloop.journal.duckdb._client import open_journal, stop_owner

        self.prepare()
        done = subprocess.run(
            [sys.executable, str(self.script), "--expected"],
            cwd=self.dir,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise LilError(f"the demo script does not run: {done.stderr.strip()[-2000:]}")
        expected = json.loads(done.stdout)
        title = f"letitloop demo: a {self.steps}-step pipeline, killed mid-run, then resumed"
        self.say(
            out.text(title, "bold"),
            out.text(f"  script {self.script}; each step is a 50-100 ms fake model call", "dim"),
            "",
        )
        try:
            journal = open_journal(self.journal_file)  # start the owner before timing anything
            self.first_run(journal)
            self.after_kill(journal)
            result = self.second_run()
            return self.verdict(result, expected, journal)
        finally:
            stop_owner(self.journal_file)


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to write the pipeline and its journal (default: a new temporary directory).",
)
@click.option("--steps", type=click.IntRange(2, 500), default=12, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True, help="Varies the documents.")
@json_option
def demo_cmd(directory: Path | None, steps: int, seed: int, as_json: bool) -> None:
    """Run a durable pipeline for real, SIGKILL it mid-run, resume it, and show what happened.

    Exits 0 only if no side effect happened twice and the result equals an uninterrupted run's.

    \b
    Example:
        lil demo --steps 12 --seed 7
    """
    demo = Demo(directory, steps, seed, quiet=as_json)
    ok = demo.run()
    if as_json:
        out.emit_json(demo.story)
    raise SystemExit(0 if ok else 1)
