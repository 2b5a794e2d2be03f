"""A ``step.map`` of limited calls on a Dask LocalCluster, with a PostgreSQL journal.

    python dask_limited.py JOURNAL_URL SERVER_URL N

Each item is one call to the counting server from a step with ``limit=SHARED``; the two
worker processes share the bucket in the database with every other client of the journal.
"""

from __future__ import annotations

import sys

from letitloop import durable, step
from letitloop.distributed import DaskExecutor
from tests.limits.limit_flows import item


def main() -> None:
    journal, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

    @durable(journal=journal, name="limited_fan")
    def fan(n: int) -> int:
        with DaskExecutor(n_workers=2) as ex:
            codes = step.map("call", item, [(i, url) for i in range(n)], on=ex)
        return sum(c == 200 for c in codes)

    print("RESULT", fan(n), flush=True)


if __name__ == "__main__":
    main()
