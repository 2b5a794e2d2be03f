"""What ``lil bench`` does with its options: pick, run, print, sign.

Progress goes to stderr; stdout carries only the result (the table, ``--markdown`` or
``--json``), so ``lil bench --json > results.json`` is the whole record. With ``--receipt FILE``
the benchmark runs again as a child process under ``letitloop.receipts.run``: its stdout (the
JSON) is written to ``--out`` and its SHA-256 is in the signed receipt, next to the command,
the git commit and the machine, so a published table can be checked against its run
(``lil bench --from results.json --receipt receipt.json`` re-renders it and checks the digest;
``lil receipt verify receipt.json`` checks the signature).
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from letitloop.bench import _frameworks as fws
from letitloop.bench._errors import BenchError
from letitloop.bench._options import DEFAULT_SEED, FULL_KILLS, QUICK_KILLS, BenchOptions
from letitloop.bench._scenario import Scenario, load, shipped_paths


@dataclass(frozen=True)
class Request:
    """The command line, parsed (``letitloop.cli._bench`` builds it)."""

    quick: bool = False
    as_json: bool = False
    as_markdown: bool = False
    frameworks: str | None = None
    kills: int | None = None
    seed: int = DEFAULT_SEED
    scenarios: tuple[str, ...] = ()
    planted_bug: bool = False
    pg_url: str | None = None
    out: Path | None = None
    receipt: Path | None = None
    key_file: Path | None = None
    signing_key: Path | None = None
    from_file: Path | None = None
    keep: bool = False
    jobs: int = 2


def choose_frameworks(spec: str | None, planted: bool) -> tuple[str, ...]:
    ids = [f.id for f in fws.FRAMEWORKS]
    chosen = ids if not spec else [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [c for c in chosen if c not in fws.BY_ID]
    if unknown or not chosen:
        raise BenchError(
            f"unknown framework(s): {', '.join(unknown) or '(none given)'}",
            fix=f"choose from {', '.join([*ids, fws.PLANTED.id])} (`lil bench --list`)",
        )
    if planted and fws.PLANTED.id not in chosen:
        chosen.append(fws.PLANTED.id)
    return tuple(chosen)


def scenarios_of(paths: tuple[str, ...]) -> list[Scenario]:
    loaded = [load(p) for p in (paths or tuple(str(p) for p in shipped_paths()))]
    names = [s.name for s in loaded]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BenchError(
            f"two scenarios are named {', '.join(dup)}", fix="give each scenario its own name"
        )
    return loaded


def options(req: Request) -> BenchOptions:
    kills = req.kills if req.kills is not None else (QUICK_KILLS if req.quick else FULL_KILLS)
    if not 1 <= kills <= 1000:
        raise BenchError(f"--kills {kills} is out of range", fix="give 1 to 1000")
    if not 1 <= req.jobs <= 8:
        raise BenchError(f"--jobs {req.jobs} is out of range", fix="give 1 to 8")
    return BenchOptions(
        frameworks=choose_frameworks(req.frameworks, req.planted_bug),
        kills=kills,
        faults_per_trial=min(kills, 3 if req.quick else 4),
        seed=req.seed,
        quick=req.quick,
        pg_url=req.pg_url,
        keep=req.keep,
        jobs=req.jobs,
    )


def verdict(data: dict[str, Any]) -> dict[str, Any]:
    """Did the planted bug show (lost work or repeated calls beyond the in-flight one)?"""
    from letitloop.bench._summary import framework_totals

    entry = data["frameworks"].get(fws.PLANTED.id)
    if entry is None:
        return {}
    t = framework_totals(entry)
    if t is None:
        return {"planted_bug": "did not run: " + str(entry.get("skipped", "no scenario ran"))}
    caught = t["lost"] > 0 or t["duplicate_effects"] > 0
    return {"planted_bug": "caught" if caught else "missed", "planted_lost": t["lost"]}


def run(req: Request, say: Any) -> dict[str, Any]:
    """Run (or load) the benchmark; the results."""
    if req.from_file is not None:
        return loaded_results(req.from_file, req.receipt)
    opts = options(req)
    scenarios = scenarios_of(req.scenarios)
    if req.receipt is not None:
        return signed_run(req, say)
    from letitloop.bench._harness import run as run_bench

    data = run_bench(opts, scenarios, say)
    data["verdict"] = verdict(data)
    return data


def loaded_results(path: Path, receipt: Path | None) -> dict[str, Any]:
    """Results written earlier; with a receipt, checked against the digest it signed."""
    try:
        raw = path.read_bytes()
        data: dict[str, Any] = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise BenchError(
            f"cannot read results {path}: {exc}", fix="give a file `lil bench --json` wrote"
        ) from None
    if receipt is not None:
        try:
            signed = json.loads(receipt.read_text())["payload"]["output"]["stdout"]["sha256"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BenchError(
                f"cannot read receipt {receipt}: {exc!r}",
                fix="give the receipt `lil bench --receipt` wrote",
            ) from None
        found = "sha256:" + hashlib.sha256(raw).hexdigest()
        if found != signed:
            raise BenchError(
                f"{path} is not the output {receipt} signed (sha256 {found}, signed {signed})",
                fix="the results were changed after the run: use the file written with the "
                "receipt, or run the benchmark again",
            )
    return data


def signed_run(req: Request, say: Any) -> dict[str, Any]:
    """Run the benchmark as a child under a signed receipt; its results."""
    from letitloop.receipts import run as receipt_run

    assert req.receipt is not None
    out = req.out or req.receipt.with_name(req.receipt.stem + ".results.json")
    argv = [sys.executable, "-m", "letitloop", "bench", "--json", "--seed", str(req.seed)]
    argv += ["--quick"] if req.quick else []
    argv += ["--frameworks", req.frameworks] if req.frameworks else []
    argv += ["--kills", str(req.kills)] if req.kills is not None else []
    argv += ["--planted-bug"] if req.planted_bug else []
    argv += ["--pg", req.pg_url] if req.pg_url else []
    argv += ["--jobs", str(req.jobs)]
    for s in req.scenarios:
        argv += ["--scenario", str(Path(s).resolve())]
    say(f"running under a signed receipt: {req.receipt} (results: {out})")
    stdout = sys.stdout
    with out.open("w") as sink:
        sys.stdout = sink  # the child's stdout, byte for byte, is the results file
        try:
            receipt = receipt_run(
                argv,
                out=req.receipt,
                key_file=req.key_file,
                signing_key_file=req.signing_key,
                stream=True,
            )
        finally:
            sys.stdout = stdout
    if receipt.exit_code != 0:
        raise BenchError(
            f"the benchmark under the receipt exited {receipt.exit_code}",
            fix=f"see its messages above; the receipt {req.receipt} records the failure",
        )
    data = loaded_results(out, req.receipt)
    data["receipt"] = {"file": str(req.receipt), "results": str(out)}
    return data


def emit(req: Request, data: dict[str, Any]) -> None:
    """Print the results the way the request asked."""
    from letitloop.bench import _report

    if req.out is not None and req.receipt is None and req.from_file is None:
        req.out.write_text(json.dumps(data, indent=1) + "\n")
    if req.as_json:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    elif req.as_markdown:
        sys.stdout.write(_report.markdown(data) + "\n")
    else:
        _report.console(data)
