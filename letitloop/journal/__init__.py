"""Journal backends behind one contract: the state machine, the in-memory twin and the backends.

``letitloop.kernel`` (the durable runtime) speaks only the ``Journal`` contract
(``journal._contract``) and gets a journal from ``open_journal`` here, which resolves the
backend from the journal's location. Backends live in their own packages (``duckdb/``: the
owner process, its log, store and client; ``postgres/``: the PostgreSQL journal). Nothing
here imports a front end.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from letitloop.journal._contract import Journal


def open_journal(spec: str | os.PathLike[str] | None = None) -> Journal:
    """The process-wide journal for ``spec`` (found as ``journal._config`` says when None): a
    DuckDB file served by its owner process, or a ``postgresql://`` URL reached directly (the
    driver, psycopg, is imported only then)."""
    from letitloop.journal._config import find_location

    found = find_location(spec)
    if isinstance(found, str):
        try:
            from letitloop.journal.postgres._journal import open_journal as open_postgres
        except ImportError as exc:
            from letitloop.errors import ConfigError

            raise ConfigError(
                f"the journal {found!r} is on PostgreSQL, and its driver is missing: {exc}",
                fix="pip install 'letitloop[postgres]'",
            ) from None
        return open_postgres(found)
    from letitloop.journal.duckdb._client import open_journal as open_duckdb

    return open_duckdb(found)
