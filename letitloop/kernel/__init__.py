"""The durable runtime: runs, steps, markers, policies, approvals, the codec and errors.

It speaks only the journal contract (``letitloop.journal``): it imports no backend directly, no
front end (notebook, language server, TUI, splicer, adapters) and no heavy optional dependency.
"""
