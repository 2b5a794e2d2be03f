"""letitloop in JupyterLab: a Jupyter server extension serving the journal to the page, and the
prebuilt lab extension (``labextension/``) that shows it.

``pip install 'letitloop[jupyterlab]'`` enables both (the wheel installs
``etc/jupyter/jupyter_server_config.d/letitloop.json`` and ``share/jupyter/labextensions/
letitloop``). The routes live under ``/lil/api/`` (``_handlers``), and journal events reach
the page through the server's event bus (``_relay``). The journal is ``LIL_JOURNAL``, else
``ServerApp.config["LetItLoop"]["journal"]``, else found from the server's root directory as
``lil`` finds it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["_jupyter_labextension_paths", "_jupyter_server_extension_points"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "letitloop"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "letitloop.jupyter"}]


def journal_spec(serverapp: Any) -> Path | str:
    """Where the server's journal is: LIL_JOURNAL, the server config, else found from root_dir;
    a DuckDB file's path (a relative one is taken from root_dir) or a ``postgresql://`` URL."""
    from letitloop.journal import find_location

    configured = serverapp.config.get("LetItLoop", {}).get("journal")
    explicit = os.environ.get("LIL_JOURNAL") or configured or None
    root = Path(serverapp.root_dir).expanduser()
    found = find_location(explicit, cwd=root)
    if isinstance(found, Path) and explicit and not Path(explicit).expanduser().is_absolute():
        found = find_location(str(root / explicit), cwd=root)
    return found


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Add the ``/lil/api/`` routes and register the journal event schema; the journal opens
    (and its owner starts) only when the first request needs it."""
    from tornado.ioloop import IOLoop

    from letitloop.journal import who
    from letitloop.jupyter._api import Context
    from letitloop.jupyter._handlers import routes
    from letitloop.jupyter._relay import Relay

    spec = journal_spec(serverapp)
    ctx = Context(spec=spec, root_dir=Path(serverapp.root_dir).expanduser(), by=who())
    relay = Relay(ctx, serverapp.event_logger, IOLoop.current())
    Relay.register(serverapp.event_logger)
    serverapp.web_app.settings["letitloop"] = ctx
    serverapp.web_app.settings["letitloop_relay"] = relay
    serverapp.web_app.add_handlers(".*$", routes(serverapp.web_app.settings["base_url"]))
    serverapp.log.info("letitloop server extension loaded (journal %s)", spec)


def _unload_jupyter_server_extension(serverapp: Any) -> None:
    """Close the journal subscription when the server stops."""
    relay = serverapp.web_app.settings.get("letitloop_relay")
    if relay is not None:
        relay.close()
