"""A fake headless coding CLI for the task runner's tests: it does what a plan file says.

``FAKE_AGENT_PLAN`` names a JSON file ``{"claude": [action, ...], ...}``; the n-th call of an
agent does its n-th action (the last one repeats). Every call is logged first, one JSON line
in ``FAKE_AGENT_LOG`` (agent, call number, argv, prompt, cwd), so a test sees the order of the
agents, the prompts (and the critique in them) and which calls really ran. Actions:

    {"do": "write", "files": {"path": "text"}, "then": "exit" | "hang"}   edit files
    {"do": "fail", "code": 3}        exit non-zero
    {"do": "hang"}                   sleep until killed (a timeout, or a test's SIGKILL)
    {"do": "nothing"}                exit 0 without touching anything
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def prompt_of(name: str, argv: list[str]) -> str:
    if "--message-file" in argv:  # aider
        return Path(argv[argv.index("--message-file") + 1]).read_text()
    if "-p" in argv and name == "gemini":
        return argv[argv.index("-p") + 1]
    if name in ("claude", "codex"):
        return sys.stdin.read()
    return argv[-1] if argv else ""


def main(name: str) -> None:
    argv = sys.argv[1:]
    prompt = prompt_of(name, argv)
    log = Path(os.environ["FAKE_AGENT_LOG"])
    lines = log.read_text().splitlines() if log.exists() else []
    call = sum(1 for ln in lines if json.loads(ln)["agent"] == name) + 1
    entry = {"agent": name, "call": call, "argv": argv, "prompt": prompt, "cwd": os.getcwd()}
    with open(log, "a") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
        os.fsync(f.fileno())
    plan = json.loads(Path(os.environ["FAKE_AGENT_PLAN"]).read_text())
    actions = plan.get(name) or [{"do": "nothing"}]
    action = actions[min(call, len(actions)) - 1]
    do = action["do"]
    if do == "fail":
        print(f"{name}: simulated failure", file=sys.stderr)
        sys.exit(action.get("code", 1))
    if do == "hang":
        time.sleep(3600)
    if do == "write":
        for path, text in action["files"].items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        if action.get("then") == "hang":
            time.sleep(3600)
    if name == "claude":
        print(json.dumps({"type": "result", "result": "done", "total_cost_usd": 0.01}))
    else:
        print(f"{name}: done")


if __name__ == "__main__":
    main(Path(sys.argv[0]).name)
