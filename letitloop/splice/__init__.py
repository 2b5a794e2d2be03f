"""Replace, insert or delete one function, method or class by qualified name, leaving every
other byte of the file as it was; plus the durable-code transforms the editor offers.

    from letitloop.splice import replace, insert, delete

    result = replace(source, "Service.fetch", new_code, protect={"Service.fetch"})
    result.source, result.changed, result.diff

Operations: ``replace``, ``insert``, ``delete``, ``wrap_in_step``, ``wrap_in_marker``,
``add_durable``; helpers ``list_targets`` and ``source_of``. Each returns a frozen
``SpliceResult`` (or a plain value) and raises a ``SpliceError`` subclass when it cannot
splice. See docs/splice.md.

libcst is imported only when an operation runs: ``import letitloop`` never imports this
package, and importing the errors or ``SpliceResult`` from it does not load libcst.
"""

from __future__ import annotations

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False

_EXPORTS = {
    "replace": "letitloop.splice._ops",
    "insert": "letitloop.splice._ops",
    "delete": "letitloop.splice._ops",
    "list_targets": "letitloop.splice._ops",
    "source_of": "letitloop.splice._ops",
    "wrap_in_step": "letitloop.splice._transforms",
    "wrap_in_marker": "letitloop.splice._transforms",
    "add_durable": "letitloop.splice._transforms",
    "SpliceResult": "letitloop.splice._result",
    "Target": "letitloop.splice._result",
    "SpliceError": "letitloop.splice._errors",
    "TargetNotFoundError": "letitloop.splice._errors",
    "AmbiguousTargetError": "letitloop.splice._errors",
    "Candidate": "letitloop.splice._errors",
    "DefinitionRenamedError": "letitloop.splice._errors",
    "InvalidSourceError": "letitloop.splice._errors",
    "SignatureChangedError": "letitloop.splice._errors",
    "propose_splice": "letitloop.splice._proposals",
    "apply_proposal": "letitloop.splice._proposals",
    "reject_proposal": "letitloop.splice._proposals",
    "list_proposals": "letitloop.splice._proposals",
    "get_proposal": "letitloop.splice._proposals",
    "ProposalConflictError": "letitloop.splice._proposals",
}
__all__ = [
    "AmbiguousTargetError",
    "Candidate",
    "DefinitionRenamedError",
    "InvalidSourceError",
    "ProposalConflictError",
    "SignatureChangedError",
    "SpliceError",
    "SpliceResult",
    "Target",
    "TargetNotFoundError",
    "add_durable",
    "apply_proposal",
    "delete",
    "get_proposal",
    "insert",
    "list_proposals",
    "list_targets",
    "propose_splice",
    "reject_proposal",
    "replace",
    "source_of",
    "wrap_in_marker",
    "wrap_in_step",
]  # == sorted(_EXPORTS), spelled out for linters

if TYPE_CHECKING:
    from letitloop.splice._errors import (
        AmbiguousTargetError,
        Candidate,
        DefinitionRenamedError,
        InvalidSourceError,
        SignatureChangedError,
        SpliceError,
        TargetNotFoundError,
    )
    from letitloop.splice._ops import delete, insert, list_targets, replace, source_of
    from letitloop.splice._proposals import (
        ProposalConflictError,
        apply_proposal,
        get_proposal,
        list_proposals,
        propose_splice,
        reject_proposal,
    )
    from letitloop.splice._result import SpliceResult, Target
    from letitloop.splice._transforms import add_durable, wrap_in_marker, wrap_in_step


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
