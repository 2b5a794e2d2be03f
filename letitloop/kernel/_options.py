"""Options of a durable run, declared once and used by the decorators, the runtime and the CLI."""

from __future__ import annotations

import os

from letitloop.errors import ConfigError
from letitloop.kernel._frozen import frozen
from letitloop.kernel._policy import Budget, Retry, StepOptions

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from letitloop.journal import Journal

    JournalSpec = str | os.PathLike[str] | Journal | None


@frozen
class DurableOptions:
    """How a durable function runs.

    Attributes:
        name: the workflow name; default ``module.qualname`` of the function.
        run_id: the run key (``goal_id`` is an alias); default derived from the arguments,
            so the same call resumes and a different call is a different run. Placeholders
            name parameters: ``run_id="sync-{user_id}"`` gives each user a run of its own. A
            call whose arguments differ from those journaled under its run id raises
            ``RunArgumentsError`` instead of returning the other call's result.
        ignore_args: with a fixed ``run_id``, the run id alone names the run: a call with
            other arguments returns (or resumes) the run journaled under that id ("same id,
            one result"). Off by default.
        journal: a journal path or ``Journal`` object; default found as ``journal._config`` says.
        lock_timeout: seconds to wait when another process is executing the same run, before
            raising ``RunLockedError``; 0 raises at once.
        allow_pickle: store outputs that have no readable encoding as HMAC-authenticated pickle.
        retry: the ``Retry`` policy of every step that does not give its own.
        timeout: seconds each attempt of a step may take, unless the step says otherwise.
        budget: what the run may spend (``Budget(usd=..., tokens=...)``); a budget raised with
            ``lil runs budget`` replaces it.
        on_change: when the code no longer matches the journal (a step renamed, reordered or
            called with other arguments): ``"raise"`` ``NonDeterminismError``, or ``"rerun"``:
            keep the unchanged prefix and run from the first changed step (the journal keeps
            the superseded attempts). Notebook cells use ``"rerun"``.
        reopen: call the function again even when its run completed, replaying every step
            (notebook cells do, so the names a cell binds are bound again).
        limit: the shared rate limit (a ``Limit`` or its name) every step waits for, unless
            the step names its own with ``limit=``.
        recover: if the process executing a run dies, a ``lil worker`` takes the run over:
            ``True`` (from the queue ``default``), a queue's name, or a ``Queue`` (its limits
            apply). Off by default: a plain call is its caller's to resume (see
            ``kernel._recover``).
    """

    name: str | None = None
    run_id: str | None = None
    journal: JournalSpec = None
    lock_timeout: float = 0.0
    allow_pickle: bool = True
    retry: Retry | None = None
    timeout: float | None = None
    budget: Budget | None = None
    on_change: str = "raise"
    reopen: bool = False
    ignore_args: bool = False
    limit: object = None
    recover: object = False

    def run_key(self, arguments: dict[str, object]) -> str | None:
        """The fixed run key for a call's bound ``arguments`` (placeholders filled), or None
        when the key derives from the arguments."""
        if self.run_id is None or "{" not in self.run_id:
            return self.run_id
        try:
            return self.run_id.format_map(arguments)
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            names = ", ".join(arguments) or "none"
            raise ConfigError(
                f"run_id {self.run_id!r} cannot be filled from the call's arguments ({exc!r}; "
                f"parameters: {names})",
                fix='name parameters in braces, e.g. run_id="sync-{user_id}"; write {{ and }} '
                "for literal braces",
            ) from None

    def step_defaults(self) -> StepOptions:
        return StepOptions(retry=self.retry, timeout=self.timeout, limit=self.limit)

    def __post_init__(self) -> None:
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise ConfigError(f"name must be a non-empty string, got {self.name!r}")
        if self.run_id is not None and (not isinstance(self.run_id, str) or not self.run_id):
            raise ConfigError(
                f"run_id must be a non-empty string, got {self.run_id!r}",
                fix="pass run_id='customer-42' (or goal_id=), or leave it out to derive it",
            )
        from letitloop.journal import check_text

        for what, text in (("name", self.name), ("run_id", self.run_id)):
            if text is not None:  # a newline would forge a row in `lil runs list`
                check_text(text, f"{what}={text!r}", ConfigError)
        if self.on_change not in ("raise", "rerun"):
            raise ConfigError(
                f"on_change must be 'raise' or 'rerun', got {self.on_change!r}",
                fix='use on_change="rerun" to rerun from the first changed step',
            )
        if (
            isinstance(self.lock_timeout, bool)
            or not isinstance(self.lock_timeout, (int, float))
            or not 0 <= self.lock_timeout < 10**9  # NaN and infinity fail this too
        ):
            raise ConfigError(
                f"lock_timeout must be a finite number of seconds >= 0, got {self.lock_timeout!r}",
                fix="pass e.g. lock_timeout=30 to wait for another process, or 0 not to wait",
            )

        if self.recover is not False:
            from letitloop.kernel._recover import recover_spec

            recover_spec(self.recover)  # a bad value fails at decoration, saying what to pass

    @classmethod
    def build(cls, goal_id: str | None = None, **kwargs: object) -> DurableOptions:
        """Accept ``goal_id`` as an alias of ``run_id``; reject giving both."""
        if goal_id is not None:
            if kwargs.get("run_id") is not None:
                raise ConfigError(
                    "both run_id and goal_id were given", fix="pass only one; they are aliases"
                )
            kwargs["run_id"] = goal_id
        return cls(**kwargs)  # type: ignore[arg-type]
