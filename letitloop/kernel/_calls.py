"""What a durable call needs to know about a Python function, without importing ``inspect``.

``inspect`` (with ``ast``, ``dis`` and ``tokenize`` under it) costs several ms to import, more
than a fresh process spends replaying a thousand steps. A plain function (positional-or-keyword
parameters, no ``*args``/``**kwargs``, not wrapped) is bound here from its code object, exactly
as ``inspect.signature(fn).bind(...)`` plus ``apply_defaults()`` would; anything else, and every
call that does not bind (so the ``TypeError`` is Python's own), goes to ``inspect``.
"""

from __future__ import annotations

import functools
import sys
from types import FunctionType, MethodType

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    import inspect
    from collections.abc import Callable
    from typing import Any

_CO_COROUTINE = 0x80
_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08


def is_async_function(fn: object) -> bool:
    """``inspect.iscoroutinefunction(fn)``: importing inspect only for what it alone can tell."""
    if "inspect" not in sys.modules:  # else it may know marks (markcoroutinefunction) set with it
        verdict = coroutine_code(fn)
        if verdict is not None:
            return verdict
    import inspect

    return inspect.iscoroutinefunction(fn)


def coroutine_code(fn: object) -> bool | None:
    """Whether the code of a plain function (under its methods and partials) is a coroutine's;
    None for any other callable."""
    while isinstance(fn, MethodType):
        fn = fn.__func__
    while isinstance(fn, functools.partial):
        fn = fn.func
    if type(fn) is FunctionType:
        return bool(fn.__code__.co_flags & _CO_COROUTINE)
    return None


def bind_call(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], tuple[Any, ...], dict[str, Any]]:
    """The bound arguments of ``fn(*args, **kwargs)``, defaults applied: ``(arguments, args,
    kwargs)`` as ``inspect.BoundArguments`` has them. A call that does not bind raises the
    ``TypeError`` that ``inspect`` raises."""
    fast = _bind_plain(fn, args, kwargs)
    if fast is not None:
        return fast, tuple(fast.values()), {}
    bound = signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments), bound.args, bound.kwargs


def _bind_plain(fn: object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The bound arguments of a call of a plain function, in parameter order; None when the
    function or the call is anything else (inspect then decides)."""
    if type(fn) is not FunctionType:
        return None
    attrs = fn.__dict__
    if attrs and ("__wrapped__" in attrs or "__signature__" in attrs):
        return None  # inspect follows these: so must we
    code = fn.__code__
    if (
        code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS)
        or code.co_kwonlyargcount
        or code.co_posonlyargcount
    ):
        return None
    count = code.co_argcount
    given = len(args)
    if given > count:
        return None
    names = code.co_varnames[:count]
    defaults = fn.__defaults__ or ()
    first_default = count - len(defaults)
    bound = dict(zip(names, args, strict=False))  # args may be fewer than names
    taken = 0
    for i in range(given, count):
        name = names[i]
        if name in kwargs:
            bound[name] = kwargs[name]
            taken += 1
        elif i >= first_default:
            bound[name] = defaults[i - first_default]
        else:
            return None  # a missing argument: inspect words the error
    if taken != len(kwargs):
        return None  # an unknown keyword, or one given twice
    return bound


@functools.cache
def signature(fn: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature(fn)``, once per function."""
    import inspect

    return inspect.signature(fn)
