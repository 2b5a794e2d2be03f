"""The durable-execution kernel: runs, steps, markers, the codec and the journal contract.

It imports no front end (notebook, language server, TUI, splicer, adapters) and no heavy
optional dependency; duckdb is imported only by the owner process.
"""
