"""Which events notify, and the bounds on what a notification carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from letitloop.errors import ConfigError
from letitloop.journal._contract import EventInfo
from letitloop.journal._outbox import MAX_BODY, body, classify, load_config


def _e(kind: str, data: dict[str, object], name: str | None = None) -> EventInfo:
    return EventInfo(7, "wf:run", kind, 1, 1, name, 1.0, data)


def test_only_the_events_people_act_on_notify() -> None:
    assert classify("step", {"kind": "approval", "ask": {"id": "a"}}) == "approval_waiting"
    assert classify("step", {"kind": "step"}) is None
    assert classify("err", {"err": {"dead": True}}) == "dead_letter"
    assert classify("err", {"err": {"dead": False}}) is None
    assert classify("fail", {"err": {"type": "letitloop.errors.InDoubtError"}}) == (
        "effect_in_doubt"
    )
    assert classify("fail", {"err": {"type": "letitloop.errors.DeadLetteredError"}}) is None
    assert classify("fail", {"err": {"type": "builtins.ValueError"}}) == "run_failed"
    budget = "step 'big' (position 0) would pass the budget: $0 spent"
    assert classify("suspend", {"reason": budget}) == "budget_stop"
    # an approval named after a budget suspends the run too, but is no budget stop
    assert classify("suspend", {"reason": "approval 'budget' (a1) is pending"}) is None
    assert classify("ok", {}) is None and classify("fail", {"err": "not a map"}) == "run_failed"


def test_bodies_are_bounded_and_stay_json() -> None:
    huge = {"err": {"type": "E", "message": "x" * 100_000}}
    for fmt in ("json", "slack"):
        text = body("run_failed", _e("fail", huge, "n" * 50_000), "k", "j", fmt)
        assert len(text) <= MAX_BODY
        assert "text" in json.loads(text)


def test_configuration_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIL_NOTIFY_URL", raising=False)
    assert load_config(tmp_path) is None  # nothing configured: notifications are off
    (tmp_path / "pyproject.toml").write_text('[tool.letitloop.notify]\nurl = "file:///etc"\n')
    with pytest.raises(ConfigError, match="http"):
        load_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.letitloop.notify]\nurl = "https://h/x"\nmax_tries = 1000\n'
    )
    with pytest.raises(ConfigError, match="max_tries"):
        load_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.letitloop.notify]\nurl = "https://h/x"\nwebhook_secret = "oops"\n'
    )
    with pytest.raises(ConfigError, match="unknown keys"):
        load_config(tmp_path)
    monkeypatch.setenv("LIL_NOTIFY_URL", "http://127.0.0.1:9/hook")
    monkeypatch.setenv("LIL_NOTIFY_SECRET", "s")
    (tmp_path / "pyproject.toml").write_text('[tool.letitloop.notify]\nformat = "slack"\n')
    cfg = load_config(tmp_path)
    assert cfg is not None and cfg.url.endswith("/hook") and cfg.secret == b"s"
    assert cfg.format == "slack"
