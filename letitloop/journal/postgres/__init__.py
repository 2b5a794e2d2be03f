"""The PostgreSQL backend: the Journal contract on a PostgreSQL schema, reached directly.

``_schema`` (location, versioned migrations), ``_journal`` (``PgJournal``: the state machine
over transactions), ``_writes`` (records into tables), ``_reads`` (queries), ``_leases`` (run
leases and fencing), ``_listen`` (pushed events via LISTEN/NOTIFY). Importing this package
imports psycopg; ``letitloop.journal.open_journal`` does so only for a ``postgresql://`` URL.
"""
