"""Journal backends behind one contract: the state machine, the in-memory twin and the backends.

``letitloop.kernel`` (the durable runtime) speaks only the ``Journal`` contract
(``journal._contract``) and gets a journal from ``open_journal`` here, which resolves the
backend from the journal's location. Backends live in their own packages (``duckdb/``: the
owner process, its log, store and client). Nothing here imports a front end.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from letitloop.journal._contract import Journal


def open_journal(spec: str | os.PathLike[str] | None = None) -> Journal:
    """The process-wide journal for ``spec`` (found as ``journal._config`` says when None)."""
    from letitloop.journal.duckdb._client import open_journal as open_duckdb

    return open_duckdb(spec)
