"""The ``lil-tui`` application: modes for runs, approvals, effects, splices, analytics and queues,
key bindings, the command palette, the live feed of journal events, and recovery when the
journal goes away.

Every screen reads through one ``Model`` and receives ``JournalChanged`` messages made from the
owner's pushed events. When a journal call fails (the owner died and cannot be restarted, the
versions differ...) the error is shown in the title bar and a notification, and the app checks
once a second until the journal answers again, then reloads every screen.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer

from letitloop import operate as ops
from letitloop.journal import EventInfo, who
from letitloop.tui._model import Clock, JournalChanged, JournalProblem, Model
from letitloop.tui._palette import RunLookup
from letitloop.tui._plain import PlainNotify
from letitloop.tui._runs import RunsScreen
from letitloop.tui._widgets import JournalScreen

SCREENS = {
    "runs": ("Runs", "Every run, live"),
    "approvals": ("Approvals", "Pending approvals across runs"),
    "effects": ("Effects in doubt", "Side effects that started and never recorded their end"),
    "splices": ("Splices", "Code changes agents proposed"),
    "analytics": ("Analytics", "Cost, latency and failures across every run"),
    "queues": ("Queues", "Queued runs, workers, who holds which run, orphans"),
}


def _later(module: str, name: str) -> Callable[[], Screen[Any]]:
    """A mode's screen, imported when the mode is first shown: opening needs the runs screen
    only, and the other screens' modules (with their widgets' classes) add to every start."""

    def make() -> Screen[Any]:
        screen: Screen[Any] = getattr(importlib.import_module(f"letitloop.tui.{module}"), name)()
        return screen

    return make


class LilApp(PlainNotify):
    """The terminal dashboard of one journal (its notifications are plain text: see
    ``letitloop.tui._plain``)."""

    CSS_PATH = "app.tcss"
    TITLE = "letitloop"
    MODES: ClassVar[dict[str, Any]] = {
        "runs": RunsScreen,
        "approvals": _later("_approvals", "ApprovalsScreen"),
        "effects": _later("_effects", "EffectsScreen"),
        "splices": _later("_splices", "SplicesScreen"),
        "analytics": _later("_analytics", "AnalyticsScreen"),
        "queues": _later("_queues", "QueuesScreen"),
    }
    DEFAULT_MODE = "runs"
    COMMANDS = App.COMMANDS | {RunLookup}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "switch_mode('runs')", "Runs"),
        Binding("2", "switch_mode('approvals')", "Approvals"),
        Binding("3", "switch_mode('effects')", "Effects"),
        Binding("4", "switch_mode('splices')", "Splices"),
        # not in the footer (the other screens' pictures stay as they are): ? and the palette
        Binding("5", "switch_mode('analytics')", "Analytics", show=False),
        Binding("6", "switch_mode('queues')", "Queues", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        journal_path: Path | str | None = None,
        *,
        model: Model | None = None,
        clock: Clock | None = None,
        live: bool = True,
    ) -> None:
        super().__init__()
        self.model = model or Model(journal_path, clock=clock)
        self.live = live
        self.listeners: set[JournalScreen] = set()
        self.resumes: list[ops.Resume] = []
        self.problem: str | None = None
        self._probe_timer: Timer | None = None
        if live:
            self.model.prefetch_runs()

    def on_mount(self) -> None:
        if self.live:
            self._subscribe()

    def on_unmount(self) -> None:
        self.model.close()

    def ui(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run ``fn`` on the UI thread, from a worker thread; a no-op once the app is closing,
        and a screen that was closed meanwhile is left alone."""
        if not self.is_running:
            return
        try:
            self.call_from_thread(self._guarded, fn, args, kwargs)
        except RuntimeError:  # the event loop stopped between the check and the call
            pass

    @staticmethod
    def _guarded(fn: Callable[..., Any], args: Any, kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except NoMatches:  # its screen was closed while the worker ran
            pass

    # the live feed ----------------------------------------------------------------------------

    @work(thread=True, group="feed")
    def _subscribe(self) -> None:

        def feed(events: list[EventInfo]) -> None:
            self.post_message(JournalChanged(events))

        try:
            self.model.subscribe(feed)
        except Exception as exc:  # shown, never fatal: see LilApp.journal_problem
            self.post_message(JournalProblem(exc))

    def on_journal_changed(self, message: JournalChanged) -> None:
        for screen in list(self.listeners):
            screen.journal_changed(message)
        from letitloop.tui._events import alerts

        for title, text in alerts(message.events):  # approvals, doubts, dead letters, stops
            self.notify(text, title=title, severity="warning", timeout=15)

    def on_journal_problem(self, message: JournalProblem) -> None:
        self.journal_problem(message.error)

    # journal problems and recovery ------------------------------------------------------------

    def journal_problem(self, error: BaseException) -> None:
        """Show what went wrong; for a journal error, probe the journal until it answers again.
        Any other error (a bug) is only shown: the dashboard keeps running."""
        from letitloop.errors import LetItLoopError

        if not isinstance(error, (LetItLoopError, OSError)):
            self.notify(str(error), title=type(error).__name__, severity="error")
            return
        message = getattr(error, "message", None) or str(error)
        fix = getattr(error, "fix", None)
        title = getattr(error, "title", "journal problem")
        first = self.problem is None
        self.problem = message
        self.sub_title = f"⚠ {title}: {message.splitlines()[0][:120]}"
        if first:
            self.notify(message + (f"\nfix: {fix}" if fix else ""), title=title, severity="error")
        if self._probe_timer is None:
            self._probe_timer = self.set_interval(1.0, self._probe)

    def _probe(self) -> None:
        self._check_journal()

    @work(thread=True, exclusive=True, group="probe")
    def _check_journal(self) -> None:

        try:
            self.model.check()
        except Exception:  # still down
            return
        self.ui(self._recovered)

    def _recovered(self) -> None:
        if self._probe_timer is not None:
            self._probe_timer.stop()
            self._probe_timer = None
        if self.problem is not None:
            self.problem = None
            self.sub_title = ""
            self.notify("the journal answers again", title="journal back")
        if self.live and self.model.subscription is None:
            self._subscribe()
        for screen in list(self.listeners):
            if screen.is_current:
                screen.reload()
            else:
                screen._stale = True

    # navigation and actions -------------------------------------------------------------------

    def open_run(self, run_id: str) -> None:
        from letitloop.tui._detail import DetailScreen

        top = self.screen
        if isinstance(top, DetailScreen) and top.run_id == run_id:
            return
        self.push_screen(DetailScreen(run_id))

    def start_resume(self, run_id: str) -> None:
        """Resume a run in a background process and follow it on its detail screen; a run that
        cannot be resumed is refused with the cause every surface gives
        (``operate.start_resume``, the check ``lil runs resume`` makes)."""
        self.open_run(run_id)
        self._resume(run_id)

    @work(thread=True, group="resume")
    def _resume(self, run_id: str) -> None:
        from letitloop.errors import LetItLoopError

        try:
            resume = ops.start_resume(self.model.journal, run_id, by=who())
        except LetItLoopError as exc:  # refused: it is cancelled, running, completed...
            self.ui(self.refused, exc)
            return
        except Exception as exc:  # the interpreter cannot be started
            self.ui(self.journal_problem, exc)
            return
        self.resumes.append(resume)
        self.ui(self.notify, resume.outcome.message, title="resume")
        code = resume.wait()
        if code == 0:
            self.ui(self.notify, f"resume of {run_id} finished", title="resume")
        else:
            tail = resume.tail() or f"exit code {code}"
            self.ui(self.notify, tail, title=f"resume of {run_id} stopped", severity="error")

    def refused(self, error: BaseException) -> None:
        """An action that does not apply, or failed: the error's sentence and its fix, as
        ``lil`` prints them (``error:`` and ``fix:``)."""
        message = getattr(error, "message", None) or str(error)
        fix = getattr(error, "fix", None)
        title = getattr(error, "title", None) or type(error).__name__
        self.notify(message + (f"\nfix: {fix}" if fix else ""), title=title, severity="error")

    def action_help(self) -> None:
        """Every key of the screen in use, explained in words (``?`` again closes it)."""
        from letitloop.tui._help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
        else:
            self.push_screen(HelpScreen(self.screen))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for mode, (title, help_text) in SCREENS.items():
            yield SystemCommand(f"Go to {title}", help_text, lambda m=mode: self.switch_mode(m))
        if isinstance(screen, JournalScreen):
            yield SystemCommand("Reload", "Read this screen again from the journal", screen.reload)


def run_app(journal: str | None = None) -> None:
    """Open the dashboard on ``journal`` (a DuckDB file or a postgresql:// URL; found like
    ``lil`` does when None)."""
    from letitloop.journal import find_location

    LilApp(find_location(journal)).run()
