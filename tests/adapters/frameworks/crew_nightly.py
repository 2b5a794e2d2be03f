"""The crew of ``crew_pipeline.py`` kicked off inside a ``@durable`` workflow, for ``lil runs
resume`` (the crew's run is a child run). ``CREW_OUT`` and ``CREW_KILL_AT`` in the environment
stand for crew_pipeline's OUT and KILL_AT: ``lil runs resume`` imports this file with its own
command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
argv, sys.argv = sys.argv, ["crew_pipeline.py", "crew", os.environ["CREW_OUT"]]
sys.argv.append(os.environ.get("CREW_KILL_AT", ""))  # crew_pipeline reads MODE OUT [KILL_AT]

import crew_pipeline as cp  # noqa: E402

sys.argv = argv

from letitloop import durable  # noqa: E402
from letitloop.adapters.crewai import durable_crew  # noqa: E402


@durable(run_id="nightly")
def nightly() -> str:
    cp.OUT.mkdir(parents=True, exist_ok=True)
    crew = durable_crew(cp.make_crew(cp.Scripted(model="scripted-1")), run_id="otters")
    return str(crew.kickoff(inputs={"reader": "Ada"}).raw)


if __name__ == "__main__":
    print(nightly())
