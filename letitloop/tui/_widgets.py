"""What every screen of the dashboard shares: loading through workers, live updates, dialogs.

``JournalScreen`` is the base of each screen: it fetches its view model on a worker thread (a
journal call may wait for an owner to start), shows it on the UI thread, and reloads when the
owner pushes events that concern it (at most every ``RELOAD_DELAY`` seconds, and only while it
is the visible screen; a hidden one reloads when shown again). ``run_write`` does the same for a
write and shows its outcome. The dialogs ask for a confirmation, a line of text or an edited
payload.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Input, TextArea

from letitloop.tui._model import STATUS_STYLE, JournalChanged, Model
from letitloop.tui._plain import PlainLabel, PlainStatic, PlainTable, cell

if TYPE_CHECKING:
    from letitloop.operate import Outcome
    from letitloop.tui._app import LilApp

RELOAD_DELAY = 0.1
T = TypeVar("T")
_FAILED = object()


def status_text(status: str) -> Text:
    return cell(status, STATUS_STYLE.get(status.split(" ")[0], ""))


class JournalScreen(Screen[None]):
    """A screen whose content comes from the journal and follows it live."""

    reload_delay = RELOAD_DELAY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stale = False
        self._reload_pending = False
        self._loading = False
        self._again = False
        self._mounted = False
        self.loaded = 0  # how many times data was shown (tests wait on it)

    @property
    def lil(self) -> LilApp:
        return self.app  # type: ignore[return-value]

    @property
    def model(self) -> Model:
        return self.lil.model

    # loading ----------------------------------------------------------------------------------

    def fetch(self) -> Any:
        """Read the view model (on a worker thread)."""
        raise NotImplementedError

    def show(self, data: Any) -> None:
        """Put the view model on screen (on the UI thread)."""
        raise NotImplementedError

    def on_mount(self) -> None:
        # Textual calls the on_mount of every class in the MRO, and a screen's own on_mount
        # calls this one too: read once (a second read of every run cost a second at open)
        if self._mounted:
            return
        self._mounted = True
        self.lil.listeners.add(self)
        self.reload()

    def on_unmount(self) -> None:
        self.lil.listeners.discard(self)

    def on_screen_resume(self) -> None:
        if self._stale:
            self._stale = False
            self.reload()

    def reload(self) -> None:
        """Read again; while a read is in flight, one more follows it (reads never pile up on
        the owner, where reading a run in full can take half a second on a big journal)."""
        self._reload_pending = False
        if self._loading:
            self._again = True
            return
        self._loading = True
        self._load()

    @work(thread=True, group="load")
    def _load(self) -> None:
        try:
            data = self.fetch()
        except Exception as exc:  # shown, never fatal: see LilApp.journal_problem
            self.lil.ui(self.lil.journal_problem, exc)
            data = _FAILED
        self.lil.ui(self._show, data)

    def _show(self, data: Any) -> None:
        self._loading = False
        if self._again:
            self._again = False
            self.schedule_reload()
        if data is not _FAILED:
            self.show(data)
            self.loaded += 1

    # live updates -----------------------------------------------------------------------------

    def wants(self, message: JournalChanged) -> bool:
        """Whether these events change what this screen shows."""
        return True

    def journal_changed(self, message: JournalChanged) -> None:
        if not self.wants(message):
            return
        if not self.is_current:
            self._stale = True
            return
        self.schedule_reload()

    def schedule_reload(self) -> None:
        if not self._reload_pending:
            self._reload_pending = True
            self.set_timer(self.reload_delay, self.reload)

    # writes -----------------------------------------------------------------------------------

    def run_write(
        self,
        fn: Callable[..., Outcome],
        *args: Any,
        after: Callable[[Outcome], None] | None = None,
        **kwargs: Any,
    ) -> None:
        """Take an action of ``letitloop.operate`` (``fn(journal, *args, **kwargs)``) on a
        worker; show its outcome (or the error that says why not), then reload."""
        self._write(fn, args, kwargs, after)

    @work(thread=True, group="write")
    def _write(
        self,
        fn: Callable[..., Outcome],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        after: Callable[[Outcome], None] | None,
    ) -> None:
        from letitloop.errors import LetItLoopError

        try:
            done = fn(self.model.journal, *args, **kwargs)
        except LetItLoopError as exc:
            self.lil.ui(self.lil.refused, exc)
        except Exception as exc:  # a bad value typed in, or a bug: shown, never fatal
            self.lil.ui(self.notify, f"{type(exc).__name__}: {exc}", severity="error")
        else:
            self.lil.ui(self.notify, done.message, title="done")
            if after is not None:
                self.lil.ui(after, done)
        self.lil.ui(self.reload)


class TableScreen(JournalScreen):
    """A journal screen around one table of rows (approvals, effects in doubt, splice
    proposals): it opens with the table focused, a reload keeps the cursor on the same row
    number, and the row under the cursor is the one an action acts on."""

    table_id = ""  # the table's widget id
    screen_title = ""  # the header's subtitle

    def on_mount(self) -> None:
        self.sub_title = self.screen_title
        self.query_one(f"#{self.table_id}", DataTable).focus()
        super().on_mount()

    def refill(self, rows: Iterable[tuple[Sequence[Any], str]]) -> None:
        """Show ``rows`` (cells, key) in place of the table's rows, the cursor where it was
        while there is still a row there."""
        table = self.query_one(f"#{self.table_id}", DataTable)
        cursor = table.cursor_row
        table.clear()
        for cells, key in rows:
            table.add_row(*cells, key=key)
        if 0 <= cursor < table.row_count:
            table.move_cursor(row=cursor, animate=False)

    def under_cursor(self, rows: Sequence[T]) -> T | None:
        """The item of ``rows`` (the data the table shows, in order) under the cursor."""
        table = self.query_one(f"#{self.table_id}", DataTable)
        if not rows or not 0 <= table.cursor_row < len(rows):
            return None
        return rows[table.cursor_row]


class RowTable(PlainTable):
    """A table of rows where Home and End move the cursor to the first and the last row (a
    plain ``DataTable`` scrolls sideways on them), as in every other list people use. Its ``str``
    cells are shown as written (``PlainTable``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "scroll_top", "First row", show=False),
        Binding("end", "scroll_bottom", "Last row", show=False),
    ]

    def __init__(self, *, id: str, columns: Iterable[Sequence[Any]] = ()) -> None:
        """``columns``: (key, label) or (key, label, width) each, in order (no width: fit)."""
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        for key, label, *width in columns:
            self.add_column(label, key=key, width=width[0] if width else None)


class ConfirmScreen(ModalScreen["str | None"]):
    """Ask before an irreversible action, with the consequence spelled out and, when the
    decision is journaled with one, an optional comment.

    Enter (or the Yes button) confirms and returns the comment (``""`` when none was typed);
    Escape (or No) returns None. A comment field takes every letter typed, so y/n are not keys
    here."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "answer(False)", "No"),
        Binding("enter", "answer(True)", "Yes", show=False, priority=True),
    ]

    def __init__(self, question: str, *, comment: bool = True) -> None:
        super().__init__()
        self.question = question
        self.with_comment = comment

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm", classes="dialog"):
            yield PlainLabel(self.question, id="question")
            if self.with_comment:
                yield Input(placeholder="comment (optional), kept with the decision", id="comment")
            with Horizontal(classes="buttons"):
                yield Button("Yes (Enter)", variant="error", id="yes")
                yield Button("No (Esc)", variant="primary", id="no")

    def on_mount(self) -> None:
        if self.with_comment:
            self.query_one("#comment", Input).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        if not answer:
            self.dismiss(None)
            return
        comment = self.query_one("#comment", Input).value if self.with_comment else ""
        self.dismiss(comment.strip())


class PromptScreen(ModalScreen[str | None]):
    """One line of text (a comment, an amount); Enter submits, Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.title_text, self.placeholder, self.value = title, placeholder, value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="prompt"):
            yield PlainLabel(self.title_text)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield PlainLabel("Enter to submit, Escape to cancel", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PayloadScreen(ModalScreen[str | None]):
    """Edit an approval's payload as JSON; ctrl+s saves, Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, title: str, text: str, check: Callable[[str], Any]) -> None:
        super().__init__()
        self.title_text, self.text, self.check = title, text, check

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="payload-dialog"):
            yield PlainLabel(self.title_text)
            yield TextArea.code_editor(self.text, language="json", id="payload-editor")
            yield PlainStatic("", id="payload-error")
            with Horizontal(classes="buttons"):
                yield Button("Save and approve (ctrl+s)", variant="success", id="save")
                yield Button("Cancel (esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.dismiss(None)

    def action_save(self) -> None:
        text = self.query_one(TextArea).text
        try:
            self.check(text)
        except ValueError as exc:
            self.query_one("#payload-error", PlainStatic).update(Text(f"not saved: {exc}", "red"))
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
