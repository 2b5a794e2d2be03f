"""``@supervise``: run a function in a child process and restart the child when it crashes.

The caller's process never re-runs anything: the child imports the function's module by name
(``python -m letitloop.kernel._supervise``, not a re-execution of ``sys.argv``), calls it with
the pickled arguments and sends back the pickled result or exception through a pipe. A child
that dies without answering (SIGKILL, the OOM killer, ``os._exit``) is restarted under the
``RestartPolicy``; combined with ``@durable`` underneath, the restarted child resumes the run
instead of starting over. An exception raised by the function is not a crash: it is re-raised
in the caller at once.

    @supervise(max_restarts=5, backoff=1.0)
    @durable
    def nightly(day): ...
"""

from __future__ import annotations

import functools
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from letitloop.errors import SupervisorError
from letitloop.kernel._restarts import RestartPolicy, Supervisor, describe_exit

P = ParamSpec("P")
R = TypeVar("R")
_CHILD = "LIL_SUPERVISED_CHILD"  # set in the child: the wrapper then calls the function directly


def supervise(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    max_restarts: int = 5,
    backoff: float = 1.0,
    max_backoff: float = 60.0,
    healthy_after: float = 30.0,
) -> Any:
    """Run the decorated function in a child process, restarted after crashes; see the module.

    Put it outermost (above ``@durable``). The function must be importable by its module and
    name, and its arguments and result picklable.
    """
    policy = RestartPolicy(max_restarts, backoff, max_backoff, healthy_after)

    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if os.environ.get(_CHILD) == str(os.getpid()):
                return func(*args, **kwargs)  # already the supervised child
            return _supervised_call(func, policy, args, kwargs)  # type: ignore[no-any-return]

        wrapper.__letitloop_supervised__ = func  # type: ignore[attr-defined]
        return wrapper

    return wrap(fn) if fn is not None else wrap


def _entry(func: Callable[..., Any]) -> str:
    """``module:qualname`` (or the script's path) that the child imports; fail clearly if none."""
    from letitloop.kernel._runtime import _entry_point

    entry = _entry_point(func)
    if entry is None:
        raise SupervisorError(
            f"@supervise cannot run {func.__qualname__} in a child process: it is defined "
            "where a new process cannot import it (inside a function, in `python -c`, a "
            "notebook cell or the REPL)",
            fix="define the function at the top level of a module (a .py file) and import it",
        )
    return entry


def _supervised_call(
    func: Callable[..., Any], policy: RestartPolicy, args: Any, kwargs: Any
) -> Any:
    entry = _entry(func)
    try:
        call = pickle.dumps((args, kwargs))
    except Exception as exc:
        raise SupervisorError(
            f"@supervise cannot send the arguments of {func.__qualname__} to its child: {exc}",
            fix="pass picklable arguments (plain data, or objects of importable classes)",
        ) from None
    request = pickle.dumps({"path": list(sys.path), "entry": entry, "call": call})
    answers: list[bytes] = []

    def start() -> subprocess.Popen[bytes]:
        answers.clear()
        return _start_child(request, answers)

    sup = Supervisor(
        policy,
        start,
        func.__qualname__,
        say=lambda msg: print(f"supervise: {msg}", file=sys.stderr, flush=True),
        is_crash=lambda code: not answers,  # no answer means the child died before finishing
    )
    try:
        code = sup.run()
    except BaseException:  # KeyboardInterrupt in the caller: do not leave the child behind
        sup.stop()
        if sup.child is not None:
            sup.child.wait()
        raise
    if not answers:
        raise SupervisorError(
            f"{func.__qualname__} kept crashing in its child process ({describe_exit(code)}); "
            f"gave up after {sup.restarts} restart(s)",
            fix="see the child's output above for the cause; raise max_restarts if it is flaky",
        )
    kind, value = pickle.loads(answers[0])
    if kind == "err":
        raise value
    return value


def _start_child(request: bytes, answers: list[bytes]) -> subprocess.Popen[bytes]:
    """Start a child with the request on one pipe; a thread collects its answer from another."""
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "letitloop.kernel._supervise", str(req_r), str(ans_w)]
    child = subprocess.Popen(cmd, pass_fds=(req_r, ans_w), env=env)
    os.close(req_r)
    os.close(ans_w)
    with os.fdopen(req_w, "wb") as f:
        f.write(request)

    def collect() -> None:
        with os.fdopen(ans_r, "rb") as f:
            data = f.read()
        if data:
            answers.append(data)

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    original_wait = child.wait

    def wait(timeout: float | None = None) -> int:
        code = original_wait(timeout)
        reader.join()  # the answer is complete once the pipe closes
        return code

    child.wait = wait  # type: ignore[method-assign]
    return child


def _child_main(req_fd: int, ans_fd: int) -> int:
    """In the child: import the function, call it, send back ("ok", value) or ("err", exc)."""
    with os.fdopen(req_fd, "rb") as f:
        request = pickle.loads(f.read())
    sys.path[:] = request["path"]
    os.environ[_CHILD] = str(os.getpid())
    from letitloop.kernel._resume import load_entry

    target = load_entry(request["entry"], "(supervised call)")
    func = getattr(target, "__letitloop_supervised__", target)
    args, kwargs = pickle.loads(request["call"])
    try:
        answer = ("ok", func(*args, **kwargs))
    except Exception as exc:
        answer = ("err", exc)
    try:
        data = pickle.dumps(answer)
    except Exception as exc:
        what = "result" if answer[0] == "ok" else f"exception {answer[1]!r}"
        data = pickle.dumps(("err", SupervisorError(f"the {what} cannot be pickled: {exc}")))
    with os.fdopen(ans_fd, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(int(sys.argv[1]), int(sys.argv[2])))
