"""Benchmark of the language server (``python -m letitloop.lsp``) against a big journal.

    python benchmarks/lsp.py [--events 1000000] [--quick] [--dir DIR]

1. Fills a fresh journal with real durable runs until it holds ``--events`` events (two worker
   processes run async fan-out workflows of 2,500 steps; each step is two events), then runs
   the workflow of the file the editor opens (10 steps) 20 times.
2. Starts the server over stdio under a pygls client and measures, per request round trip:
   the first hover (cold cache), warm hovers on a step, and code lenses for the file.
3. Times the diagnostics of a 5,000-line durable file: ``analyze()`` alone (cold, and after an
   edit), and end to end (didOpen or didChange -> publishDiagnostics, debounce off).

Prints medians and p95s, each against its bar (hover <= 20 ms median; diagnostics for 5,000
lines <= 200 ms, after an edit and when the file is opened, which parses it whole).
``--quick`` uses 100,000 events. Scratch data lives in a temporary directory under ``--dir``
(default ``<repo>/.bench``) and is removed, with the owner, at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

STEPS_PER_RUN = 2500
BULK = """import asyncio
import sys

from letitloop import async_step, durable_async


async def work(i):
    return {"i": i, "text": "x" * 40}


@durable_async
async def fan(run: int, n: int):
    out = []
    for chunk in range(0, n, 250):
        batch = range(chunk, min(n, chunk + 250))
        out += await asyncio.gather(*(async_step(f"s{i}", work, i) for i in batch))
    return len(out)


if __name__ == "__main__":
    first, count, n = (int(a) for a in sys.argv[1:4])
    for run in range(first, first + count):
        asyncio.run(fan(run, n))
"""
TARGET = """import sys

from letitloop import atomic_marker, durable, step


def fetch(i):
    return {"user": i, "note": "hello " * 20}


@durable
def pipeline(x: int):
    a = step("fetch_user", fetch, x)
    b = step("enrich", fetch, x + 1)
    c = step("score", fetch, x + 2)
    d = step("summarize", fetch, x + 3)
    e = step("rank", fetch, x + 4)
    with atomic_marker("notify") as go:
        if go:
            pass
    f = step("store", fetch, x + 5)
    g = step("audit", fetch, x + 6)
    h = step("report", fetch, x + 7)
    return [a, b, c, d, e, f, g, h]


if __name__ == "__main__":
    for x in range(int(sys.argv[1])):
        pipeline(x)
"""
HOVER_LINE, HOVER_COL = 11, 9  # on `step` of "fetch_user"


def big_file(lines: int) -> str:
    """A durable module of about ``lines`` lines: many durable functions with steps, clocks
    and side effects (so the analysis has findings to report)."""
    head = "import os\nimport time\n\nfrom letitloop import atomic_marker, durable, step\n\n\n"
    block = (
        "@durable\n"
        "def flow_{n}(x: int):\n"
        '    a = step("fetch_{n}", fetch, x)\n'
        "    started = time.time()\n"
        '    with atomic_marker("send_{n}") as go:\n'
        "        if go:\n"
        '            os.remove("/tmp/x")\n'
        "    for i in range(3):\n"
        '        step(f"loop_{{i}}", fetch, i)\n'
        '    return step("done_{n}", fetch, [a, started])\n'
        "\n\n"
    )
    per = block.count("\n")
    text = head + "def fetch(x):\n    return x\n\n\n"
    text += "".join(block.format(n=n) for n in range(max(1, (lines - 10) // per)))
    return text


def populate(workdir: Path, journal: Path, events: int) -> int:
    env = {**os.environ, "LIL_JOURNAL": str(journal), "PYTHONPATH": str(REPO)}
    (workdir / "bulk.py").write_text(BULK)
    (workdir / "bench_target.py").write_text(TARGET)
    runs = max(1, round(events / (2 * STEPS_PER_RUN)))
    half = runs // 2
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "bulk.py", "0", str(half), str(STEPS_PER_RUN)], cwd=workdir, env=env
        ),
        subprocess.Popen(
            [sys.executable, "bulk.py", str(half), str(runs - half), str(STEPS_PER_RUN)],
            cwd=workdir,
            env=env,
        ),
    ]
    for p in procs:
        if p.wait() != 0:
            raise SystemExit("a bulk worker failed")
    subprocess.run([sys.executable, "bench_target.py", "20"], cwd=workdir, env=env, check=True)
    from letitloop.journal.duckdb._client import open_journal

    stats = open_journal(journal).stats()
    print(
        f"journal: {stats['events']:,} events, {stats['runs']:,} runs, "
        f"{stats['attempts']:,} attempts, filled in {time.perf_counter() - started:.0f} s"
    )
    return int(stats["events"])


def ms(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(len(xs) * 0.95))]
    return f"median {statistics.median(xs):7.2f} ms   p95 {p95:7.2f} ms   (n={len(xs)})"


async def measure_server(workdir: Path, journal: Path, big: str, rounds: int) -> dict[str, Any]:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("lil-bench", "1")
    published: asyncio.Queue[Any] = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(ls: Any, params: types.PublishDiagnosticsParams) -> None:
        published.put_nowait(params)

    env = {**os.environ, "PYTHONPATH": str(REPO), "LIL_LSP_DEBOUNCE": "0"}
    await client.start_io(sys.executable, "-m", "letitloop.lsp", "--journal", str(journal), env=env)
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=workdir.as_uri())
    )
    client.initialized(types.InitializedParams())
    target = workdir / "bench_target.py"
    uri = target.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=target.read_text()
            )
        )
    )
    await published.get()
    doc = types.TextDocumentIdentifier(uri=uri)
    hover = types.HoverParams(
        text_document=doc, position=types.Position(line=HOVER_LINE, character=HOVER_COL)
    )
    out: dict[str, Any] = {}
    t = time.perf_counter()
    first = await client.text_document_hover_async(hover)
    out["hover_first"] = [(time.perf_counter() - t) * 1e3]
    assert first is not None and "fetch_user" in first.contents.value, first
    out["hover"] = []
    for _ in range(rounds):
        t = time.perf_counter()
        await client.text_document_hover_async(hover)
        out["hover"].append((time.perf_counter() - t) * 1e3)
    out["lens"] = []
    for _ in range(rounds):
        t = time.perf_counter()
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
        out["lens"].append((time.perf_counter() - t) * 1e3)
    assert lenses and lenses[0].command.title.startswith("lil: 20 runs"), lenses[0]

    big_uri = (workdir / "big.py").as_uri()
    t = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=big_uri, language_id="python", version=1, text=big
            )
        )
    )
    await published.get()
    out["diagnostics_open"] = [(time.perf_counter() - t) * 1e3]
    out["diagnostics_e2e"] = []
    for version in range(2, 2 + max(5, rounds // 10)):
        t = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=big_uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text=big + f"# {version}\n")
                ],
            )
        )
        params = await published.get()
        out["diagnostics_e2e"].append((time.perf_counter() - t) * 1e3)
    out["diagnostics_count"] = len(params.diagnostics)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 events, fewer rounds")
    parser.add_argument("--dir", type=Path, default=REPO / ".bench")
    parser.add_argument("--lines", type=int, default=5000)
    args = parser.parse_args()
    events = 100_000 if args.quick else args.events
    rounds = 50 if args.quick else 200
    args.dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="lsp-bench-", dir=args.dir))
    journal = workdir / "journal" / "journal.duckdb"
    os.environ.setdefault("LIL_KEY_DIR", str(workdir / "keys"))
    try:
        populate(workdir, journal, events)
        big = big_file(args.lines)
        from letitloop.lsp import _analysis
        from letitloop.lsp._analysis import analyze

        cold, edited = [], []
        for _ in range(5):
            _analysis._CHUNKS.clear()
            _analysis._PLACED.clear()
            _analysis._SEEN.clear()
            t = time.perf_counter()
            findings = analyze(big).findings
            cold.append((time.perf_counter() - t) * 1e3)
        for n in range(20):
            t = time.perf_counter()
            analyze(big + f"# edit {n}\n")
            edited.append((time.perf_counter() - t) * 1e3)
        out = asyncio.run(measure_server(workdir, journal, big, rounds))
        lines = big.count("\n")
        print(f"hover, first (cold cache)        {out['hover_first'][0]:7.2f} ms")
        print(f"hover on a step (warm)           {ms(out['hover'])}")
        print(f"code lenses for the file         {ms(out['lens'])}")
        print(f"analyze() {lines:,} lines, cold      {ms(cold)}   ({len(findings)} findings)")
        print(f"analyze() after an edit          {ms(edited)}")
        print(f"diagnostics e2e, file opened     {out['diagnostics_open'][0]:7.2f} ms")
        print(f"diagnostics e2e after an edit    {ms(out['diagnostics_e2e'])}")
        hover = statistics.median(out["hover"])
        diag = statistics.median(out["diagnostics_e2e"])
        opened = out["diagnostics_open"][0]
        print(
            f"bars: hover median {hover:.2f} ms / 20 ms = {hover / 20:.2f}x; diagnostics for "
            f"{lines:,} lines after an edit {diag:.1f} ms / 200 ms = {diag / 200:.2f}x, "
            f"when opened {opened:.1f} ms / 200 ms = {opened / 200:.2f}x"
        )
    finally:
        from letitloop.journal.duckdb._client import stop_owner

        stop_owner(journal)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
