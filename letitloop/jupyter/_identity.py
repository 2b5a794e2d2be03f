"""Who decides from JupyterLab, as the journal keeps it: the person Jupyter authenticated.

Every decision the server extension journals (an approval, an effect resolved, a splice applied
or rejected, a budget, a cancel, a reset) was recorded as the server's OS user, which is the same
for everyone on a shared server (JupyterHub, a team's lab). ``decider`` names the authenticated
Jupyter user instead (``self.current_user`` of the handler: its username, and its display name
when that says more), and keeps the server's OS user beside it:
``jupyter:ana "Ana Lima" (server jovyan@lab-7)``. It is one ``by`` string, so every surface that
shows who decided (lil-tui's event log, ``lil runs show``, ``lil approvals``, the lab's run view
and notifications) shows it without change.

The names come from the identity provider, not from letitloop: control characters are dropped,
runs of whitespace become one space (none in the username), each part is cut to
``MAX_NAME`` characters, and the display name is quoted as JSON, so a name cannot end the string
early or pose as another part of it.
"""

from __future__ import annotations

import json
from typing import Any

MAX_NAME = 64
SOURCE = "jupyter"


def _clean(value: object, spaces: str) -> str:
    text = "".join(c if c.isprintable() else " " for c in str(value or ""))
    return spaces.join(text.split())[:MAX_NAME]


def decider(user: Any, server: str) -> str:
    """``by`` for a decision taken by ``user`` (a ``jupyter_server.auth.User``, or None when
    the server has no identity) through a server run by ``server`` (``user@host``)."""
    username = _clean(getattr(user, "username", None), "_")
    if not username:
        return server
    shown = _clean(getattr(user, "display_name", None) or getattr(user, "name", None), " ")
    who = f"{SOURCE}:{username}"
    if shown and shown != username:
        who += " " + json.dumps(shown, ensure_ascii=False)
    return f"{who} (server {server})"
