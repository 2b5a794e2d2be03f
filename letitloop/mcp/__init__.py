"""``lil mcp``: the journal for coding agents, over the Model Context Protocol.

A thin front end over the operate layer (``letitloop.operate``) and the journal's face, so an
agent reads the same runs, errors, markers in doubt, approvals and proposals as every other
surface, on DuckDB and PostgreSQL. Built with the official ``mcp`` SDK
(``pip install 'letitloop[mcp]'``), imported only when the server starts: importing this package
imports nothing.

    _command    the click command (stdio, or --http), declared once
    _options    Limits (every bound) and Settings ([tool.letitloop.mcp] allow = [...])
    _tools      every tool's name, description and bounded argument schema; check()
    _reads      the read tools (runs, a run, a step's output, effects, approvals, proposals,
                notifications, limits, SQL, the report)
    _acts       the act tools the user may allow (resume, retry, cancel, fork, propose a
                splice, start a task, verify a receipt), journaled with the client's name
    _service    the journal, the project root, pages, cursors and caps
    _server     the translation: MCP requests in, tools and run resources out, errors as answers
    _follow     resource subscriptions (lil://runs/{id}): the journal's push, fanned out
    _stdio      stdin/stdout, bounded; _http: Streamable HTTP behind a token, loopback only

A person's decisions (approve or reject an approval, resolve a side effect in doubt, apply a
splice) are never tools: the answers about them say where a person takes them.
"""
