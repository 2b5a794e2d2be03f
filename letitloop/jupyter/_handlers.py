"""Thin Tornado handlers of the server extension: each route reads its arguments and calls one
function of ``_api`` in a worker thread. Jupyter's own token/XSRF checks guard every route
(``APIHandler`` + ``tornado.web.authenticated``); errors are 4xx JSON to that one request. A
route that decides journals who did: the user Jupyter authenticated (``Base.by``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from letitloop.errors import (
    ApprovalDecidedError,
    ConfigError,
    JournalError,
    JournalUnavailableError,
    LetItLoopError,
    RunLockedError,
)
from letitloop.jupyter import _api as api
from letitloop.jupyter._identity import decider

RUN = r"(?P<run>[^/]{1,400})"
ID = r"(?P<ident>[A-Za-z0-9_.:-]{1,200})"


def status_of(exc: LetItLoopError) -> int:
    """The HTTP status of a library error: what the request did wrong, or 503 for no journal."""
    if isinstance(exc, api.BadRequest):
        return exc.status
    if isinstance(exc, JournalUnavailableError):
        return 503
    if isinstance(exc, ApprovalDecidedError | RunLockedError) or "conflict" in exc.title:
        return 409
    if isinstance(exc, ConfigError):
        return 400
    if isinstance(exc, JournalError) and exc.message.startswith("no "):
        return 404
    return 400 if not type(exc).__name__.startswith("Splice") else 409


class Base(APIHandler):
    """Runs an ``_api`` call off the IOLoop and writes its answer or its error as JSON."""

    @property
    def ctx(self) -> api.Context:
        ctx: api.Context = self.settings["letitloop"]
        return ctx

    async def answer(
        self,
        call: Callable[..., dict[str, Any]],
        *args: Any,
        body: dict[str, tuple[type, ...]] | None = None,
    ) -> None:
        """Answer with ``call(ctx, *args)`` (and the request's checked JSON body, if ``body``
        says which fields it may have)."""
        relay = self.settings["letitloop_relay"]
        try:
            if body is not None:
                args = (*args, api.parse_body(self.request.body, body))
            await asyncio.to_thread(relay.start)
            result = await asyncio.to_thread(call, self.ctx, *args)
        except LetItLoopError as exc:
            self.set_status(status_of(exc))
            result = {"error": exc.to_dict()}
        except ValueError as exc:  # a library check on a value the page sent
            self.set_status(400)
            result = {"error": {"type": "ValueError", "title": "bad request", "message": str(exc)}}
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(result, default=str))

    @property
    def by(self) -> str:
        """Who decides: the authenticated Jupyter user, beside the server's OS user."""
        return decider(self.current_user, self.ctx.by)

    def arg(self, name: str) -> str | None:
        value = self.get_argument(name, None)
        return value[:1000] if value is not None else None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(
            json.dumps(
                {"error": {"type": "HTTPError", "status": status_code, "message": self._reason}}
            )
        )


class Runs(Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(api.list_runs, self.arg("status"), self.arg("q") or "", self.arg("limit"))


class Run(Base):
    @tornado.web.authenticated
    async def get(self, run: str) -> None:
        await self.answer(api.run_detail, run)


class RunAction(Base):
    @tornado.web.authenticated
    async def post(self, run: str) -> None:
        fields: dict[str, tuple[type, ...]] = {"action": (str,), "dollars": (int, float)}
        await self.answer(api.run_action, run, self.by, body=fields)


class Approvals(Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(api.list_approvals, self.arg("status"))


class Decide(Base):
    @tornado.web.authenticated
    async def post(self, ident: str) -> None:
        fields = {"approved": (bool,), "comment": (str, type(None)), "payload": ()}
        await self.answer(api.decide_approval, ident, self.by, body=fields)


class Effects(Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(api.list_effects)


class Resolve(Base):
    @tornado.web.authenticated
    async def post(self, run: str, position: str) -> None:
        fields: dict[str, tuple[type, ...]] = {"resolution": (str,)}
        await self.answer(api.resolve_effect, run, int(position), self.by, body=fields)


class Splices(Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(api.list_proposals, self.arg("state"))


class SpliceDecision(Base):
    @tornado.web.authenticated
    async def post(self, ident: str, verb: str) -> None:
        fields: dict[str, tuple[type, ...]] = {"comment": (str, type(None))}
        await self.answer(api.decide_proposal, ident, verb, self.by, body=fields)


class Queues(Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(api.list_queues)


class Cells(Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        path = self.arg("path") or ""
        names = [n[:200] for n in self.get_arguments("name")]
        keys: list[str | None] = [k[:200] or None for k in self.get_arguments("key")]
        keys += [None] * (len(names) - len(keys))
        await self.answer(api.cell_runs, path, list(zip(names, keys, strict=False)))


def routes(base_url: str) -> list[tuple[str, type[Base]]]:
    def at(path: str) -> str:
        return str(url_path_join(base_url, "lil", "api", path))

    return [
        (at("runs"), Runs),
        (at(f"runs/{RUN}/actions"), RunAction),
        (at(f"runs/{RUN}"), Run),
        (at("approvals"), Approvals),
        (at(f"approvals/{ID}/decide"), Decide),
        (at("effects"), Effects),
        (at(f"effects/{RUN}/(?P<position>[0-9]{{1,9}})/resolve"), Resolve),
        (at("splices"), Splices),
        (at(f"splices/{ID}/(?P<verb>apply|reject)"), SpliceDecision),
        (at("queues"), Queues),
        (at("cells"), Cells),
    ]
