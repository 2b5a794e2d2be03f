"""The journal owner: the process that opens a journal's DuckDB file and serves its clients.

Only this package imports duckdb. Its entry point is ``python -S -m
letitloop.journal.duckdb.owner --journal PATH`` (``__main__``); the owner itself is
``_loop.Owner``, made of one part per job (see ``_base``). Importing the package imports
nothing else, so ``-S`` start-up stays cheap.
"""
