"""letitloop in IPython and Jupyter: ``%%durable`` cells and widgets to steer runs.

    %load_ext letitloop

registers the ``%%durable`` cell magic and makes ``step``, ``approval``, ``atomic_marker``,
``suspend``, ``current_step`` and the policies ``Retry``, ``Invalid`` and ``Budget`` available in
the notebook. Widgets: ``ApprovalWidget``, ``RunInspector`` (no argument: the notebook's last
durable cell), ``EffectsInDoubt`` and ``RetryWidget`` (shown under a failed cell); ``runs()``
renders the journal's runs as a table. IPython and ipywidgets are imported only when the
extension is loaded or a widget is built.
"""

from __future__ import annotations

from typing import Any

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False

_EXPORTS = {
    "DurableMagics": "letitloop.notebook_ext._magic",
    "ApprovalWidget": "letitloop.notebook_ext._widgets",
    "RunInspector": "letitloop.notebook_ext._inspector",
    "RetryWidget": "letitloop.notebook_ext._widgets",
    "EffectsInDoubt": "letitloop.notebook_ext._effects",
    "runs": "letitloop.notebook_ext._render",
    "RunList": "letitloop.notebook_ext._render",
}
__all__ = sorted([*_EXPORTS, "load_ipython_extension", "unload_ipython_extension"])

if TYPE_CHECKING:
    from letitloop.notebook_ext._effects import EffectsInDoubt as EffectsInDoubt
    from letitloop.notebook_ext._inspector import RunInspector as RunInspector
    from letitloop.notebook_ext._magic import DurableMagics as DurableMagics
    from letitloop.notebook_ext._render import RunList as RunList, runs as runs
    from letitloop.notebook_ext._widgets import (
        ApprovalWidget as ApprovalWidget,
        RetryWidget as RetryWidget,
    )

_NAMES = (
    "step",
    "approval",
    "atomic_marker",
    "suspend",
    "current_step",
    "Retry",
    "Invalid",
    "Budget",
)


def load_ipython_extension(ip: Any) -> None:
    """``%load_ext letitloop``: the ``%%durable`` magic, and the durable names if free."""
    import letitloop
    from letitloop.notebook_ext._magic import DurableMagics

    ip.register_magics(DurableMagics)
    ip.push({n: getattr(letitloop, n) for n in _NAMES if n not in ip.user_ns})


def unload_ipython_extension(ip: Any) -> None:
    """``%unload_ext letitloop``: remove the ``%%durable`` magic."""
    ip.magics_manager.magics["cell"].pop("durable", None)  # IPython has no public unregister


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
