"""``?``: every key of the screen in use, each explained in a sentence.

The footer has room for a word per key ("Reset"), which does not say what a key does to a run
or whether it can be undone. The help screen lists the keys of the screen underneath (its own,
then the app's), with the sentence from ``EXPLAIN`` for each; a key without one shows its
footer word, so a new binding is never missing from the list.
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen

from letitloop.tui._plain import PlainLabel, PlainStatic, plain

EXPLAIN: dict[str, str] = {
    # app
    "switch_mode('runs')": "Show every run in the journal, newest first, updated live.",
    "switch_mode('approvals')": "Show the approvals waiting for a decision, across all runs.",
    "switch_mode('effects')": "Show side effects in doubt: atomic_marker blocks that started "
    "and never recorded their end (the process died inside them).",
    "switch_mode('splices')": "Show the code changes agents proposed, with their diffs.",
    "switch_mode('analytics')": "Show where the time and money went across every run: cost "
    "per workflow and model, the slowest steps, failure and retry rates, a sparkline per day.",
    "switch_mode('queues')": "Show the queues (what waits, what runs, the oldest wait), the "
    "workers (host, pid, heartbeat, runs in hand), who holds which run, and orphaned runs.",
    # queues
    "pause": "Pause the selected queue (workers take none of its runs; those running go on), "
    "or resume it.",
    "reread": "Read the queues and workers again now (they also reload every 2 seconds).",
    # analytics
    "window": "Show the analytics of another time span: all time, 30 days, 7 days, 24 hours.",
    "reload": "Read the analytics from the journal again now (they also reload when runs end).",
    "help": "Show or close this list of keys.",
    "quit": "Leave lil-tui. Nothing running is stopped: runs go on in their own processes.",
    "command_palette": "Open the command palette: type to find a screen or a command.",
    # runs and run detail
    "open": "Open the selected run: its steps, attempts, outputs, errors and events.",
    "filter": "Type part of a run id or workflow name to show only the runs that match.",
    "status": "Show only runs in one status; press again for the next status, then all.",
    "sort": "Sort the runs by the next column (started, workflow, status, duration, cost).",
    "resume": "Continue the selected run in a background process: completed steps come back "
    "from the journal without running, the rest run.",
    "retry": "Give the selected run's dead-lettered step new attempts; then press R to "
    "resume the run.",
    "budget": "Set a new spending limit in US dollars for the selected run; a run stopped by "
    "its budget continues when it is resumed.",
    "reset": "Start the selected run over: its next call runs every step again, side effects "
    "included. Asks first; the history stays in the journal.",
    "cancel": "Stop the selected run for good: a process executing it stops at its next step "
    "and it is not resumed until reset. Asks first, with an optional comment.",
    "fork": "Fork the run at the selected step: a new run reuses the steps before it and runs "
    "from it on (press R on the fork to run it); this run stays as it is. Asks first.",
    "back": "Go back to the previous screen.",
    "approve": "Go to the approvals this run is waiting for.",
    # approvals
    "decide(True)": "Approve the selected request, with an optional comment; the run continues "
    "(a suspended one when it is resumed). The first decision wins.",
    "decide(False)": "Reject the selected request, with an optional comment.",
    "edit": "Edit the request's payload as JSON (checked against its schema), then approve it.",
    # effects in doubt
    "resolve('done')": "The side effect happened: it never runs again and the run continues "
    "after it. Asks first.",
    "resolve('redo')": "The side effect did not happen: it runs again when the run is resumed. "
    "Asks first.",
    # splices
    "apply": "Write the proposed change into the file, if the target is unchanged since it was "
    "proposed. Asks first, with an optional comment kept in the journal.",
    "reject": "Reject the proposal, with a comment for whoever proposed it.",
    # tables
    "cursor_up": "Move to the row above.",
    "cursor_down": "Move to the row below.",
    "page_up": "Move one page up.",
    "page_down": "Move one page down.",
    "scroll_top": "Move to the first row.",
    "scroll_bottom": "Move to the last row (on the runs screen this also loads more runs).",
    "select_cursor": "Open the selected row.",
    "page_left": "Scroll the table one page to the left.",
    "page_right": "Scroll the table one page to the right.",
    "app.focus_next": "Move the keyboard focus to the next part of the screen.",
    "app.focus_previous": "Move the keyboard focus to the previous part of the screen.",
    "screen.copy_text": "Copy the text selected with the mouse to the clipboard.",
}
NAVIGATION = (
    "cursor_up",
    "cursor_down",
    "page_up",
    "page_down",
    "scroll_top",
    "scroll_bottom",
    "page_left",
    "page_right",
    "app.focus_next",
    "app.focus_previous",
    "screen.copy_text",
)


def key_rows(screen: Screen[object]) -> list[tuple[str, str]]:
    """``(keys, explanation)`` for each action bound on ``screen`` (the focused widget's keys,
    the screen's and the app's), in the order Textual resolves them, each action once."""
    by_action: dict[str, list[str]] = {}
    words: dict[str, str] = {}
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if binding.system or binding.action in ("cursor_left", "cursor_right"):
            continue
        if binding.action in ("scroll_home", "scroll_end"):
            continue
        shown = screen.app.get_key_display(binding) or key
        keys = by_action.setdefault(binding.action, [])
        if shown not in keys:
            keys.append(shown)
        words.setdefault(binding.action, binding.description)
    actions = sorted(by_action, key=lambda a: a in NAVIGATION)  # moving around goes last
    return [(" ".join(by_action[a]), EXPLAIN.get(a) or words.get(a) or a) for a in actions]


class HelpScreen(ModalScreen[None]):
    """The keys of the screen below, in words; ``?`` or Escape closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close"),
    ]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under
        self.rows = key_rows(under)

    def compose(self) -> ComposeResult:
        table = Table(show_header=False, box=None, padding=(0, 1), expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True, justify="right")
        table.add_column("what it does", ratio=1)
        for keys, text in self.rows:
            table.add_row(plain(keys), plain(text))
        title = self.under.sub_title or type(self.under).__name__.removesuffix("Screen")
        with VerticalScroll(id="help-dialog", classes="dialog"):
            yield PlainLabel(plain(f"Keys on this screen ({title})", "bold"))
            yield PlainStatic(table, id="help-keys")
            yield PlainLabel("? or Escape closes this", classes="hint")

    def action_close(self) -> None:
        self.dismiss(None)
