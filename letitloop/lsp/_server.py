"""The pygls 2 language server behind ``lil lsp``: thin handlers over the analysis, the journal
view and the actions.

Journal reads run in threads (``asyncio.to_thread``), so the event loop keeps answering while a
run writes; the owner's pushed events re-publish diagnostics and ask the client to refresh its
code lenses. The server never opens DuckDB and never runs user code: previews are the text the
journal gives. Every action (resume, fork, approve, reject, reject a proposal) is taken through
``letitloop.operate``, refused with the same cause as on every surface when it does not apply.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from letitloop import operate as ops
from letitloop._version import __version__
from letitloop.errors import LetItLoopError
from letitloop.journal import who
from letitloop.lsp import _actions, _journal_view, _queue_lens
from letitloop.lsp._analysis import (
    Analysis,
    Finding,
    analyze,
    function_at,
    gc_paused,
    site_at,
)
from letitloop.lsp._journal_view import JournalView, workflow_candidates
from letitloop.lsp._positions import Span, from_encoding, line_at, to_encoding
from letitloop.lsp._queue_lens import QueueLenses

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}
DEBOUNCE = float(os.environ.get("LIL_LSP_DEBOUNCE", "0.15"))
NOTEBOOKS = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")])
    ]
)


class LilServer(LanguageServer):
    """The language server with its journal view and per-document state."""

    def __init__(self, journal: str | None = None) -> None:
        super().__init__("lil-lsp", __version__, notebook_document_sync=NOTEBOOKS)
        self.journal_spec = journal
        self.view = JournalView(journal, self._journal_changed)
        self.queues = QueueLenses(self.view)
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.refresh_handle: asyncio.TimerHandle | None = None

    # -- documents ------------------------------------------------------------------------
    def text(self, uri: str) -> tuple[str, list[str]]:
        doc = self.workspace.get_text_document(uri)
        return doc.source, doc.source.splitlines() or [""]

    def path(self, uri: str) -> str:
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        return to_fs_path(notebook.uri if notebook else uri) or uri

    def encoding(self) -> str:
        """The negotiated position encoding: "utf-16" (the default), "utf-8" or "utf-32".

        (``str()`` of lsprotocol's enum is ``PositionEncodingKind.Utf8``: use its value.)"""
        kind = self.workspace.position_encoding
        return str(getattr(kind, "value", kind) or "utf-16")

    def range(self, lines: list[str], span: Span) -> types.Range:
        enc = self.encoding()
        start = to_encoding(line_at(lines, span.line), span.col, enc)
        end = to_encoding(line_at(lines, span.end_line), span.end_col, enc)
        return types.Range(
            start=types.Position(line=span.line, character=start),
            end=types.Position(line=span.end_line, character=end),
        )

    def position(self, lines: list[str], pos: types.Position) -> tuple[int, int]:
        return pos.line, from_encoding(line_at(lines, pos.line), pos.character, self.encoding())

    def diagnostic(self, lines: list[str], f: Finding) -> types.Diagnostic:
        return types.Diagnostic(
            range=self.range(lines, f.span),
            message=f.message,
            severity=SEVERITY[f.severity],
            code=f.code,
            source="letitloop",
            data={"fix": f.fix, "target": f.target} if f.fix else None,
        )

    def text_edits(self, lines: list[str], edits: list[_actions.LineEdit]) -> list[types.TextEdit]:
        return [
            types.TextEdit(range=self.range(lines, Span(*e[:4])), new_text=e.text) for e in edits
        ]

    def workspace_edit(
        self, uri: str, lines: list[str], edits: list[_actions.LineEdit], preview: str = ""
    ) -> types.WorkspaceEdit:
        """A WorkspaceEdit; with ``preview`` (a diff) as a change annotation that asks the user
        to confirm, for clients that support annotations (VS Code shows it before applying)."""
        plain = self.text_edits(lines, edits)
        workspace = self.client_capabilities.workspace
        supports = workspace and workspace.workspace_edit
        if not (
            preview
            and supports
            and supports.change_annotation_support
            and supports.document_changes
        ):
            return types.WorkspaceEdit(changes={uri: plain})
        annotated = [
            types.AnnotatedTextEdit(range=e.range, new_text=e.new_text, annotation_id="splice")
            for e in plain
        ]
        doc = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=doc, edits=annotated)],
            change_annotations={
                "splice": types.ChangeAnnotation(
                    label="Apply splice proposal", needs_confirmation=True, description=preview
                )
            },
        )

    # -- diagnostics ----------------------------------------------------------------------
    def schedule(self, uri: str, delay: float = DEBOUNCE) -> None:
        """Publish diagnostics for ``uri`` once edits pause for ``delay`` seconds."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self.pending[uri] = loop.call_later(delay, lambda: asyncio.ensure_future(self.publish(uri)))

    async def publish(self, uri: str) -> None:
        self.pending.pop(uri, None)
        try:
            doc = self.workspace.get_text_document(uri)
        except KeyError:
            return
        source, version = doc.source, doc.version
        analysis = analyze(source)
        findings = list(analysis.findings)
        if analysis.functions:
            findings += await asyncio.to_thread(self.journal_findings, uri, analysis)
        lines = source.splitlines() or [""]
        with gc_paused():
            diagnostics = [self.diagnostic(lines, f) for f in findings]
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
            )

    def journal_findings(self, uri: str, analysis: Analysis) -> list[Finding]:
        if not self.view.ready():
            return []
        path = self.path(uri)
        out: list[Finding] = []
        for fn in analysis.functions:
            out += _journal_view.journal_findings(self.view.state(path, fn), fn)
        return out

    # -- live refresh ---------------------------------------------------------------------
    def _journal_changed(self, runs: set[str]) -> None:
        """Called on the subscription thread when the owner pushes events."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._refresh_soon)

    def _refresh_soon(self) -> None:
        if self.refresh_handle is None:
            loop = asyncio.get_running_loop()
            self.refresh_handle = loop.call_later(
                0.05, lambda: asyncio.ensure_future(self.refresh())
            )

    async def refresh(self) -> None:
        """Re-publish every open document's diagnostics and ask for fresh code lenses; again
        after the view's throttle window if it served data older than the last events."""
        self.refresh_handle = None
        self.view.behind = False
        for uri in list(self.workspace.text_documents):
            await self.publish(uri)
        workspace = self.client_capabilities.workspace
        lenses = workspace.code_lens if workspace else None
        if lenses is not None and lenses.refresh_support:
            self.workspace_code_lens_refresh(None)
        if self.view.behind and self.refresh_handle is None:
            loop = asyncio.get_running_loop()
            self.refresh_handle = loop.call_later(
                _journal_view.THROTTLE, lambda: asyncio.ensure_future(self.refresh())
            )

    def run_resume(self, run_id: str, uri: str) -> int:
        """Start ``lil runs resume RUN`` in the background, in the file's directory
        (``operate.start_resume``: refused with the cause when the run cannot be resumed;
        journaled as started by the editor's user); its pid."""
        cwd = os.path.dirname(self.path(uri)) or None
        return ops.start_resume(self.view.journal, run_id, cwd=cwd, by=who()).process.pid

    def refused(self, what: str, exc: LetItLoopError) -> dict[str, Any]:
        """Show why an action was refused (its cause and fix, as ``lil`` prints them)."""
        fix = f" (fix: {exc.fix})" if exc.fix else ""
        message = f"letitloop: cannot {what}: {exc.message}{fix}"
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=message)
        )
        return {"error": exc.to_dict()}


server = LilServer()


def create_server(journal: str | None = None) -> LilServer:
    """The module's server, configured for a journal (``--journal``; None: discovery)."""
    server.journal_spec = journal
    server.view = JournalView(journal, server._journal_changed)
    server.queues = QueueLenses(server.view)
    return server


@server.feature(types.INITIALIZED)
async def initialized(ls: LilServer, params: types.InitializedParams) -> None:
    ls.loop = asyncio.get_running_loop()
    await asyncio.to_thread(ls.view.start)
    if ls.view.error:
        ls.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Warning,
                message=f"letitloop: journal not readable ({ls.view.error}); "
                "journal hovers and lenses are off until it is",
            )
        )


@server.feature(types.SHUTDOWN)
def shutdown(ls: LilServer, params: None) -> None:
    ls.view.close()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: LilServer, params: types.DidOpenTextDocumentParams) -> None:
    await ls.publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LilServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LilServer, params: types.DidCloseTextDocumentParams) -> None:
    pending = ls.pending.pop(params.text_document.uri, None)
    if pending is not None:
        pending.cancel()
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
    )


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
async def notebook_open(ls: LilServer, params: types.DidOpenNotebookDocumentParams) -> None:
    for cell in params.cell_text_documents:
        await ls.publish(cell.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_change(ls: LilServer, params: types.DidChangeNotebookDocumentParams) -> None:
    cells = params.change.cells
    changed = [c.document.uri for c in (cells.text_content or [])] if cells else []
    opened = cells.structure.did_open or [] if cells and cells.structure else []
    for uri in changed + [c.uri for c in opened]:
        ls.schedule(uri)


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: LilServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    source, lines = ls.text(uri)
    analysis = analyze(source)
    line, col = ls.position(lines, params.position)
    site = site_at(analysis, line, col)
    fn = function_at(analysis, line)
    if site is not None and site.name is not None and fn is not None:
        state = await asyncio.to_thread(ls.view.state, ls.path(uri), fn)
        text, span = _journal_view.render_step_hover(state, site), site.span
    elif fn is not None and (fn.name_span.line == line or fn.span.line == line):
        state = await asyncio.to_thread(ls.view.state, ls.path(uri), fn)
        text, span = _journal_view.render_function_hover(state, fn), fn.name_span
    else:
        return None
    markdown = types.MarkupContent(kind=types.MarkupKind.Markdown, value=text)
    return types.Hover(contents=markdown, range=ls.range(lines, span))


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
async def code_lens(ls: LilServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    source, lines = ls.text(uri)
    analysis = analyze(source)
    path = ls.path(uri)
    states = await asyncio.to_thread(lambda: [ls.view.state(path, f) for f in analysis.functions])
    lenses: list[types.CodeLens] = []

    def lens(span: Span, title: str, command: str = "letitloop.showRuns", *args: Any) -> None:
        cmd = types.Command(title=title, command=command, arguments=list(args))
        lenses.append(types.CodeLens(range=ls.range(lines, span), command=cmd))

    queued = await asyncio.to_thread(
        lambda: [ls.queues.of(workflow_candidates(path, f)) for f in analysis.functions]
    )
    for fn, state, queues in zip(analysis.functions, states, queued, strict=True):
        head = _journal_view.function_lens_title(state)
        lens(fn.name_span, head, "letitloop.showRuns", uri, fn.qualname)
        for q in queues:  # where its runs wait, and who runs them
            lens(fn.name_span, _queue_lens.title(q), "letitloop.showRuns", uri, fn.qualname)
        resume = _journal_view.resumable(state)
        if resume:
            lens(fn.name_span, "Resume last run", "letitloop.resumeRun", resume, uri)
        for site in fn.steps:
            title = _journal_view.step_lens_title(state, site)
            if title:
                lens(site.name_span, title, "letitloop.showRuns", uri, fn.qualname)
            if (fork := _journal_view.fork_point(state, site)) is not None:
                lens(site.name_span, "Fork from here", "letitloop.forkRun", *fork, uri)
        for approval in state.approvals:
            asked = next((s for s in fn.steps if s.name == approval.name), None)
            if asked is not None:
                lens(asked.name_span, "Approve", "letitloop.approve", approval.id)
                lens(asked.name_span, "Reject", "letitloop.reject", approval.id)
    return lenses


def _code_action(
    ls: LilServer, uri: str, a: _actions.Action, lines: list[str]
) -> types.CodeAction | types.Command:
    """An action with an edit is a CodeAction; a command-only one is a bare Command (a
    CodeAction carrying a command is misread as a Command by lsprotocol-based clients)."""
    if a.command is not None:
        return types.Command(title=a.title, command=a.command[0], arguments=a.command[1])
    return types.CodeAction(
        title=a.title,
        kind=a.kind,
        edit=types.WorkspaceEdit(changes={uri: ls.text_edits(lines, list(a.edits))}),
        data={"diff": a.diff} if a.diff else None,
    )


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite]
    ),
)
async def code_action(
    ls: LilServer, params: types.CodeActionParams
) -> list[types.CodeAction | types.Command]:
    uri = params.text_document.uri
    source, lines = ls.text(uri)
    analysis = analyze(source)
    line, col = ls.position(lines, params.range.start)
    end_line = params.range.end.line
    out: list[types.CodeAction | types.Command] = []
    seen: set[tuple[_actions.LineEdit, ...]] = set()
    for finding in analysis.findings:
        if finding.span.line <= end_line and line <= finding.span.end_line:
            action = _actions.fix_for(source, finding)
            if action is not None and action.edits not in seen:
                seen.add(action.edits)
                fix = _code_action(ls, uri, action, lines)
                matched = [d for d in params.context.diagnostics if d.code == finding.code]
                if isinstance(fix, types.CodeAction):
                    fix.diagnostics = matched or None
                out.append(fix)
    for action in _actions.refactors(source, analysis, line, col, end_line):
        if action.edits not in seen:
            out.append(_code_action(ls, uri, action, lines))
    proposals = await asyncio.to_thread(_proposals, ls)
    for action in _actions.proposal_actions(uri, ls.path(uri), proposals):
        out.append(_code_action(ls, uri, action, lines))
    return out


def _proposals(ls: LilServer) -> list[Any]:
    try:
        if not ls.view.ready():
            return []
        return list(ls.view.journal.proposals("pending"))
    except Exception:
        return []


@server.command("letitloop.showRuns")
async def show_runs(ls: LilServer, uri: str, qualname: str = "") -> dict[str, Any]:
    """Open the list of a durable function's runs: a Markdown page the editor shows with
    ``window/showDocument`` (or, for an editor without it, the list in a message). The result
    carries the runs and the page's URI, for clients that show them themselves."""
    from letitloop.lsp import _runs_view

    source, _ = ls.text(uri)
    path = ls.path(uri)
    functions = analyze(source).functions
    fn = next((f for f in functions if f.qualname == qualname), None)
    if fn is None and len(functions) == 1:
        fn = functions[0]
    if fn is None:
        message = f"letitloop: no durable function {qualname!r} in {path}"
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )
        return {"runs": [], "view": None}
    runs, total = await asyncio.to_thread(ls.view.all_runs, path, fn, _runs_view.VIEW_RUNS)
    workflow = runs[0].workflow if runs else _journal_view.workflow_candidates(path, fn)[0]
    page = _runs_view.render_runs_view(workflow, fn.qualname, path, runs, total)
    view = await asyncio.to_thread(_runs_view.write_view, workflow, fn.qualname, page)
    view_uri = view.as_uri()
    window = ls.client_capabilities.window
    shown = False
    if window is not None and window.show_document is not None and window.show_document.support:
        answer = await ls.window_show_document_async(
            types.ShowDocumentParams(uri=view_uri, take_focus=True)
        )
        shown = bool(answer and answer.success)
    if not shown:
        message = _runs_view.render_message(workflow, fn.qualname, runs, total)
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=f"{message}\nview: {view}")
        )
    return {
        "workflow": workflow,
        "total": total,
        "runs": [_runs_view.run_summary(r) for r in runs],
        "view": view_uri,
        "shown": shown,
    }


@server.command("letitloop.resumeRun")
async def resume_run(ls: LilServer, run_id: str, uri: str) -> dict[str, Any]:
    try:
        pid = await asyncio.to_thread(ls.run_resume, run_id, uri)
    except LetItLoopError as exc:
        return {"run_id": run_id} | ls.refused(f"resume {run_id}", exc)
    ls.window_show_message(
        types.ShowMessageParams(
            type=types.MessageType.Info, message=f"resuming {run_id} (pid {pid})"
        )
    )
    return {"run_id": run_id, "pid": pid}


@server.command("letitloop.forkRun")
async def fork_run(ls: LilServer, run_id: str, position: int, uri: str) -> dict[str, Any]:
    """Fork a run at a step (the steps before it are reused) and start the fork in the
    background, as the Resume lens does; a run that cannot be forked says why."""
    journal = ls.view.journal
    try:
        done = await asyncio.to_thread(ops.fork, journal, run_id, int(position), by=who())
    except LetItLoopError as exc:
        return {"run_id": run_id} | ls.refused(f"fork {run_id}", exc)
    fork_id = str(done.data["fork"])
    pid = None
    if done.data["resumable"]:
        try:
            pid = await asyncio.to_thread(ls.run_resume, fork_id, uri)
        except LetItLoopError as exc:
            ls.refused(f"run the fork {fork_id}", exc)
    started = f"; running it (pid {pid})" if pid else f"; run it with lil runs resume {fork_id}"
    message = f"forked {run_id} at position {position} into {fork_id}{started}"
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=message))
    return {"run_id": run_id, "fork": fork_id, "position": int(position), "pid": pid}


@server.command("letitloop.proposal.apply")
async def proposal_apply(ls: LilServer, proposal_id: str, uri: str) -> dict[str, Any]:
    from letitloop.splice import get_proposal

    source, lines = ls.text(uri)
    journal = ls.view.journal
    p = await asyncio.to_thread(get_proposal, proposal_id, journal=journal)
    edits, diff = _actions.proposal_edit(source, ls.path(uri), p)
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(
            edit=ls.workspace_edit(uri, lines, edits, preview=diff),
            label=f"splice proposal {p.id}: {p.target}",
        )
    )
    if result.applied:
        await asyncio.to_thread(journal.decide, p.id, "applied", who())
    return {"proposal": p.id, "applied": result.applied}


@server.command("letitloop.proposal.reject")
async def proposal_reject(ls: LilServer, proposal_id: str) -> dict[str, Any]:
    journal = ls.view.journal
    done = await asyncio.to_thread(ops.reject_splice, journal, proposal_id, by=who())
    return {"proposal": done.data["proposal_id"], "state": done.data["state"]}


async def _decide(ls: LilServer, approval_id: str, approved: bool) -> dict[str, Any]:
    journal = ls.view.journal
    done = await asyncio.to_thread(
        lambda: ops.decide_approval(journal, approval_id, approved=approved, by=who())
    )
    return {"approval": approval_id, "status": done.data["status"]}


@server.command("letitloop.approve")
async def approve(ls: LilServer, approval_id: str) -> dict[str, Any]:
    return await _decide(ls, approval_id, True)


@server.command("letitloop.reject")
async def reject(ls: LilServer, approval_id: str) -> dict[str, Any]:
    return await _decide(ls, approval_id, False)


@server.command("letitloop.runsTree")
async def runs_tree(ls: LilServer, limit: int = 200) -> dict[str, Any]:
    """Runs and pending approvals for an editor's own view of the journal (the VS Code
    extension's "letitloop runs" tree), in the JSON shapes every surface writes
    (``operate.run_json``, ``operate.approval_json``); empty lists until the journal exists."""

    def read() -> dict[str, Any]:
        if not ls.view.ready():
            return {"runs": [], "approvals": []}
        journal = ls.view.journal
        pending = journal.approvals(status="pending", limit=1000)
        runs = ops.list_summaries(journal, limit=max(1, min(int(limit), 1000)))
        return {
            "runs": [ops.run_json(r) for r in runs],
            "approvals": [ops.approval_json(a) for a in pending],
        }

    return await asyncio.to_thread(read)
