"""The Jupyter server extension's REST API as a surface: a real JupyterLab server (a subprocess,
``tests.helpers.jupyter_lab``) whose ``LIL_JOURNAL`` is the scenario's DuckDB file or
``postgresql://`` URL, asked over HTTP with its token."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.helpers import jupyter_lab
from tests.matrix.build import Scenario
from tests.matrix.reading import Reading


@dataclass
class Rest:
    """A running server: its URL and token, and who a decision taken through it names (one
    user for every request, as a page's: its cookie keeps Jupyter's identity of the first)."""

    base: str
    token: str
    opener: urllib.request.OpenerDirector
    by: str = ""

    def call(self, method: str, path: str, body: Any = None, **params: str) -> tuple[int, Any]:
        """``(status, JSON answer)`` of ``/lil/api/PATH``."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base}/lil/api/{path}{query}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with self.opener.open(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def get(self, path: str, **params: str) -> Any:
        status, answer = self.call("GET", path, **params)
        assert status == 200, (path, status, answer)
        return answer

    def post(self, path: str, body: Any) -> Any:
        status, answer = self.call("POST", path, body)
        assert status == 200, (path, status, answer)
        return answer


@contextmanager
def rest_server(s: Scenario, state: Path) -> Iterator[Rest]:
    """JupyterLab with letitloop's server extension serving the scenario's project."""
    from letitloop.journal import who
    from letitloop.jupyter._identity import decider

    state.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in s.env.items() if k.startswith("LIL_") and k != "LIL_JOURNAL"}
    with jupyter_lab(s.project, s.location, state=state, extensions=True, env=env) as lab:
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        server = Rest(lab["base"], lab["token"], opener)
        me = urllib.request.Request(
            f"{lab['base']}/api/me", headers={"Authorization": f"token {lab['token']}"}
        )
        with opener.open(me, timeout=60) as answer:
            identity = json.loads(answer.read())["identity"]
        server.by = decider(SimpleNamespace(**identity), who())
        yield server


def read(rest: Rest, truth_ids: list[str]) -> Reading:
    """Every listing the lab's API serves, and every run in full."""
    listed = rest.get("runs", limit="5000")
    return Reading(
        runs=listed["runs"],
        views={run_id: rest.get(f"runs/{urllib.parse.quote(run_id)}") for run_id in truth_ids},
        doubts=rest.get("effects")["effects"],
        approvals=rest.get("approvals", status="pending")["approvals"],
        proposals=rest.get("splices")["proposals"],
        texts={"waiting": listed["waiting"]},
    )


def acts(s: Scenario, rest: Rest) -> dict[str, str]:
    """Every action the lab's API offers, as the lab's page sends it; each answer's sentence
    (the signed ``(by ...)`` taken off: it must name the Jupyter user) normalized."""
    from tests.matrix.acts import (
        BUDGET_USD,
        CANCELLED,
        Targets,
        expect,
        normal,
        refusal,
        wait_status,
    )

    t, j, q = Targets("rest"), s.journal, urllib.parse.quote
    greet, bye = t.proposal(s, "greet"), t.proposal(s, "bye")

    def act(run: str, body: dict[str, Any]) -> Any:
        return rest.post(f"runs/{q(run)}/actions", body)

    said: dict[str, Any] = {}
    said["approve"] = rest.post(f"approvals/{t.approval(j, t.approve)}/decide", {"approved": True})
    assert said["approve"]["approval"]["status"] == "approved"
    resumed = act(t.approve, {"action": "resume"})
    assert resumed["action"] == "resume" and resumed["pid"] > 0, resumed
    wait_status(j, t.approve, "completed")
    said["reject"] = rest.post(f"approvals/{t.approval(j, t.reject)}/decide", {"approved": False})
    said["cancel"] = act(t.reject, {"action": "cancel"})
    said["reset"] = act(t.reject, {"action": "reset"})
    said["retry"] = act(t.dead, {"action": "retry"})
    said["budget"] = act(t.dead, {"action": "budget", "dollars": BUDGET_USD})
    said["resolve"] = rest.post(f"effects/{q(t.effect)}/1/resolve", {"resolution": "done"})
    said["apply"] = rest.post(f"splices/{greet}/apply", {})
    said["reject splice"] = rest.post(f"splices/{bye}/reject", {})
    for answer in said.values():
        assert answer["by"] == rest.by, (rest.by, answer)
        assert answer["message"].endswith(f" (by {rest.by})"), answer
    status, answer = rest.call("POST", f"runs/{q(CANCELLED)}/actions", {"action": "resume"})
    assert status == 409, (status, answer)  # a conflict with the run's state
    assert (answer["error"]["message"], answer["error"]["fix"]) == refusal(j)
    expect(s, "rest", rest.by, set(said) | {"resume"})
    texts = {
        a: str(answer["message"]).removesuffix(f" (by {rest.by})") for a, answer in said.items()
    }
    texts["refused resume"] = (
        f"error: {answer['error']['message']}\n  fix: {answer['error']['fix']}"
    )
    return {a: normal(s, text, "rest", rest.by, (greet, bye)) for a, text in texts.items()}
