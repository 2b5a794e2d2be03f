"""``lil bench``: an honest durability benchmark of agent frameworks under real faults.

    lil bench --quick                       # every framework installed here, 3 faults a scenario
    lil bench --frameworks letitloop,langgraph --kills 20 --seed 7 --json

The harness is outside every framework: it starts each scenario's worker in the framework's own
interpreter, kills it (SIGKILL at a seeded moment, inside a side effect, SIGTERM then SIGKILL,
the OOM killer, a PostgreSQL restart), restarts it as that framework resumes, and judges only
from a counter server on 127.0.0.1 (the offline model, the side effects, the person's inbox)
and the final answer. See docs/bench.md. Modules here are imported only when ``lil bench`` runs.
"""
