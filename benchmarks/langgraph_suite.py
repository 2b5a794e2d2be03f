"""LangGraph's own test suite against the letitloop saver, with InMemorySaver and SqliteSaver.

    .venv/bin/python benchmarks/langgraph_suite.py                  # every saver, both modes
    .venv/bin/python benchmarks/langgraph_suite.py --modes strict   # LANGGRAPH_STRICT_MSGPACK only
    .venv/bin/python benchmarks/langgraph_suite.py -k "pydantic"    # a subset (pytest -k)
    .venv/bin/python benchmarks/langgraph_suite.py tests/test_pydantic.py   # upstream files
    .venv/bin/python benchmarks/langgraph_suite.py --journal postgres   # ours on PostgreSQL

The tests are LangGraph's, from the sdist on PyPI of the langgraph version installed here
(``pip download --no-binary``, kept in ``--cache``); nothing of theirs is committed to this
repository. They are extracted into a scratch folder, and ``langgraph_suite_shim.py`` is added
beside upstream's ``tests/conftest.py``: it replaces the ``sync_checkpointer`` and
``async_checkpointer`` fixtures by one saver at a time and keeps only the tests that take one
of them (the checkpointer-parametrised tests, upstream's ``NO_DOCKER`` set: no PostgreSQL or
Redis servers). The baselines are built by upstream's own helpers, and ``--modes strict`` sets
``LANGGRAPH_STRICT_MSGPACK=true``, under which upstream gives every saver its strict serializer,
ours included; ``default`` is how upstream's CI runs the whole suite.

A regression against a baseline is a test that passes with it and not with ours. The script
prints each saver's counts per mode, the regressions against each baseline, and the tests
where the two baselines disagree; it exits 1 if there is any regression. ``--json`` writes
every outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIM = Path(__file__).with_name("langgraph_suite_shim.py")
SAVERS = ("memory", "sqlite", "letitloop")
BASELINES = ("memory", "sqlite")
MODES = ("default", "strict")


def sdist(cache: Path) -> Path:
    """LangGraph's sdist of the installed version, downloaded once from PyPI into ``cache``."""
    ver = version("langgraph")
    path = cache / f"langgraph-{ver}.tar.gz"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", f"langgraph=={ver}"]
            + ["--no-deps", "--no-binary", ":all:", "--dest", str(cache)],
            check=True,
        )
    return path


def prepare(archive: Path, work: Path) -> Path:
    """Upstream's ``tests/`` in ``work``, with the shim added; returns the folder to run in."""
    prefix = archive.name.removesuffix(".tar.gz") + "/tests/"
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        for m in members:
            m.name = m.name.removeprefix(prefix.removesuffix("tests/"))
        tar.extractall(work, members=members, filter="data")
    tests = work / "tests"
    if not (tests / "conftest.py").exists():
        raise SystemExit(f"{archive} has no tests/conftest.py: not a langgraph sdist with tests")
    shutil.copy(SHIM, tests / "conftest_letitloop.py")
    with (tests / "conftest.py").open("a") as f:
        f.write("\n\nfrom tests.conftest_letitloop import *  # noqa: E402,F403 (letitloop shim)\n")
    (work / "pytest.ini").write_text("[pytest]\n")  # not upstream's addopts (--strict-config)
    # letitloop from this tree, without putting this repository's own tests/ package on the path
    site = work / "site"
    site.mkdir()
    (site / "letitloop").symlink_to(ROOT / "letitloop")
    return work


def run_one(
    work: Path, saver: str, mode: str, journal: str, select: list[str], timeout: int
) -> tuple[dict[str, str], float]:
    """One pytest run of the suite with one saver; every test's outcome, and the wall time."""
    out = work / f"outcomes-{saver}-{mode}.jsonl"
    out.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "LANGGRAPH_STRICT_MSGPACK"}
    env |= {
        "NO_DOCKER": "true",  # upstream's set without PostgreSQL/Redis servers
        "LIL_LG_SUITE_SAVER": saver,
        "LIL_LG_SUITE_JOURNAL": journal,
        "LIL_LG_SUITE_OUT": str(out),
        "PYTHONPATH": str(work / "site"),
        "LIL_KEY_DIR": str(work / "keys"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if mode == "strict":
        env["LANGGRAPH_STRICT_MSGPACK"] = "true"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:asyncio"]
    args += ["-p", "no:randomly", "--timeout", str(timeout), *select]
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    outcomes: dict[str, str] = {}
    if out.exists():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            outcomes[row["test"]] = row["outcome"]
    if proc.returncode not in (0, 1) or not outcomes:
        sys.stderr.write(proc.stdout[-5000:] + proc.stderr[-5000:])
        raise SystemExit(f"pytest with {saver} ({mode}) exited {proc.returncode}")
    (work / f"pytest-{saver}-{mode}.log").write_text(proc.stdout + proc.stderr)
    return outcomes, elapsed


def compare(results: dict[str, dict[str, str]]) -> tuple[dict[str, list[str]], list[str]]:
    """Regressions against each baseline (it passes, ours does not) and the tests the two
    baselines disagree on."""
    ours = results["letitloop"]
    tests = sorted(set().union(*results.values()))
    regressions = {
        b: [t for t in tests if results[b].get(t) == "passed" and ours.get(t) != "passed"]
        for b in BASELINES
    }
    split = [t for t in tests if len({results[b].get(t) for b in BASELINES}) > 1]
    return regressions, split


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--savers", default=",".join(SAVERS), help="comma-separated, of " + str(SAVERS))
    ap.add_argument("--modes", default=",".join(MODES), help="default, strict, or both")
    ap.add_argument("--journal", default="duckdb", help="duckdb, postgres, or a postgresql:// URL")
    ap.add_argument("-k", dest="select", help="pytest -k expression: run a subset")
    ap.add_argument("files", nargs="*", default=["tests"], help="upstream test files to run")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/letitloop/langgraph-suite")
    ap.add_argument("--sdist", type=Path, help="a langgraph sdist to take the tests from")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per test")
    ap.add_argument("--json", type=Path, help="write every outcome here")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder (logs)")
    opts = ap.parse_args()
    savers = opts.savers.split(",")
    modes = opts.modes.split(",")
    work = Path(tempfile.mkdtemp(prefix="lil-lg-suite-"))
    server = None
    try:
        journal = opts.journal
        if journal == "postgres":
            sys.path.insert(0, str(ROOT))
            from tests.pg_cluster import open_server

            server = open_server()
            journal = server.dsn
        archive = opts.sdist or sdist(opts.cache)
        prepare(archive, work)
        print(f"langgraph {version('langgraph')} tests from {archive.name}; ours on {opts.journal}")
        report: dict[str, object] = {"langgraph": version("langgraph"), "modes": {}}
        failed = False
        for mode in modes:
            results: dict[str, dict[str, str]] = {}
            print(
                f"\n== {mode} ({'LANGGRAPH_STRICT_MSGPACK=true' if mode == 'strict' else 'unset'})"
            )
            for saver in savers:
                select = [*opts.files, *(["-k", opts.select] if opts.select else [])]
                results[saver], elapsed = run_one(work, saver, mode, journal, select, opts.timeout)
                counts = Counter(results[saver].values())
                shown = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
                print(f"{saver:>10}: {len(results[saver])} tests, {shown}  ({elapsed:.0f} s)")
            entry: dict[str, object] = {"outcomes": results}
            if set(SAVERS) <= set(savers):
                regressions, split = compare(results)
                entry |= {"regressions": regressions, "baselines_differ": split}
                for b in BASELINES:
                    print(
                        f"regressions against {b} ({b} passes, letitloop does not): "
                        f"{len(regressions[b])}"
                    )
                    for t in regressions[b]:
                        print(f"  {t}: {results['letitloop'].get(t, 'not run')}")
                print(f"baselines differ: {len(split)}")
                for t in split:
                    row = ", ".join(f"{s} {results[s].get(t, 'not run')}" for s in SAVERS)
                    print(f"  {t}: {row}")
                failed = failed or any(regressions.values())
            report["modes"][mode] = entry  # type: ignore[index]
        if opts.json:
            opts.json.write_text(json.dumps(report, indent=1))
        if opts.keep:
            print(f"\nlogs in {work}")
        return 1 if failed else 0
    finally:
        if server is not None:
            server.close()
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
