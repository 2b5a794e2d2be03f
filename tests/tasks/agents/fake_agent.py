"""A fake headless coding CLI for the task runner's tests: it does what a plan file says.

``FAKE_AGENT_PLAN`` names a JSON file ``{"claude": [action, ...], ...}``; the n-th call of an
agent does its n-th action (the last one repeats). Every call is logged first, one JSON line
in ``FAKE_AGENT_LOG`` (agent, call number, argv, prompt, cwd), so a test sees the order of the
agents, the prompts (and the critique in them) and which calls really ran. Actions:

    {"do": "write", "files": {"path": "text"}, "then": "exit" | "hang"}   edit files
        "critiqued": {"path": "text"}   written instead when the prompt carries a critique (an
                                        agent whose edit depends on its prompt only, as a real
                                        one run again on the same tree and prompt)
        "links": {"path": "target"}     then make each path a symbolic link to target (whatever
                                        was there, a file or a directory, removed first; not
                                        when the prompt carries a critique and "critiqued" is set)
        "fifos": ["path"]               then make each path a FIFO (a file there removed first)
        "code": 1                       then exit with this status
    {"do": "fail", "code": 3}        exit non-zero
    {"do": "hang"}                   sleep until killed (a timeout, or a test's SIGKILL)
    {"do": "nothing"}                exit 0 without touching anything
"""

from __future__ import annotations

import json
import os
import shutil
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
        critiqued = "Critique of the previous attempt" in prompt and "critiqued" in action
        for path, text in action["critiqued" if critiqued else "files"].items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        for path, target in ({} if critiqued else action.get("links", {})).items():
            link = Path(path)
            if link.is_dir() and not link.is_symlink():
                shutil.rmtree(link)
            elif link.exists() or link.is_symlink():
                link.unlink()
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target)
        for path in action.get("fifos", []):
            Path(path).unlink(missing_ok=True)
            os.mkfifo(path)
        if action.get("then") == "hang":
            time.sleep(3600)
        if action.get("code"):
            print(f"{name}: simulated failure after editing", file=sys.stderr)
            sys.exit(action["code"])
    if name == "claude":
        print(json.dumps({"type": "result", "result": "done", "total_cost_usd": 0.01}))
    else:
        print(f"{name}: done")


if __name__ == "__main__":
    main(Path(sys.argv[0]).name)
