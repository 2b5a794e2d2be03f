"""What steps cost: ``record_cost()`` inside a step, and usage read from model responses.

Each attempt's cost is journaled with it, in integer micro-dollars (no float drift in sums), with
its input and output tokens and the model. A step's output that looks like a provider response
(an object with ``usage`` and ``model``, in the OpenAI ``prompt_tokens``/``completion_tokens`` or
the Anthropic ``input_tokens``/``output_tokens`` spelling) is costed automatically from
``PRICES``, unless the step recorded its cost itself.
"""

from __future__ import annotations

import math
from contextvars import ContextVar

from letitloop.errors import ConfigError, NotInDurableContextError

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

# USD per million tokens (input, output). Prices change: override with set_prices().
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-sonnet-4": (3.00, 15.00),
    "fake-1": (1.00, 2.00),  # letitloop.testing.FakeLLM
}

if TYPE_CHECKING:
    Cost = dict[str, Any]  # {"usd_micros": int, "in": int, "out": int, "model": str | None}
else:
    Cost = dict
_current: ContextVar[Cost | None] = ContextVar("letitloop_cost", default=None)


def set_prices(prices: dict[str, tuple[float, float]]) -> None:
    """Add or replace models' prices: ``{"my-model": (usd_per_1m_in, usd_per_1m_out)}``."""
    for model, pair in prices.items():
        if len(pair) != 2 or any(not isinstance(p, (int, float)) or p < 0 for p in pair):
            raise ConfigError(
                f"price of {model!r} must be (usd per 1M input tokens, usd per 1M output tokens)",
                fix='e.g. set_prices({"my-model": (0.5, 1.5)})',
            )
        PRICES[model] = (float(pair[0]), float(pair[1]))


def price(model: str | None, tokens_in: int, tokens_out: int) -> int | None:
    """Micro-dollars for that usage, or None for a model without a price (longest prefix)."""
    if not model:
        return None
    known = [m for m in PRICES if model == m or model.startswith(m + "-")]
    if not known:
        return None
    per_in, per_out = PRICES[max(known, key=len)]
    return round(tokens_in * per_in + tokens_out * per_out)  # $/1M tokens = micro-$/token


def record_cost(
    usd: float | None = None,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    model: str | None = None,
) -> None:
    """Add to the cost of the step attempt running now; ``usd`` is priced from the tokens when
    not given and the model has a price."""
    cost = _current.get()
    if cost is None:
        raise NotInDurableContextError(
            "record_cost() was called outside a step function",
            fix="call it inside the function passed to step() or async_step()",
        )
    if usd is not None and (
        isinstance(usd, bool) or not isinstance(usd, (int, float)) or not math.isfinite(usd)
    ):
        raise ConfigError(
            f"record_cost(usd=) must be a finite number of US dollars, got {usd!r}",
            fix="pass e.g. record_cost(0.012), or leave usd out to price the tokens",
        )
    for what, n in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(
                f"record_cost({what}=) must be a whole number of tokens >= 0, got {n!r}",
                fix=f"pass an int, e.g. {what}=1200",
            )
    if usd is not None and usd < 0:
        raise ConfigError(f"record_cost(usd=) cannot be negative, got {usd!r}")
    micros = (
        round(usd * 1_000_000) if usd is not None else price(model, input_tokens, output_tokens)
    )
    _add(cost, micros or 0, input_tokens, output_tokens, "record_cost()")
    cost["model"] = model or cost["model"]
    cost["recorded"] = True


def begin() -> tuple[Cost, Any]:
    """A fresh accumulator for one attempt, made current; returns it and the reset token."""
    cost: Cost = {"usd_micros": 0, "in": 0, "out": 0, "model": None, "recorded": False}
    return cost, _current.set(cost)


def end(token: Any) -> None:
    _current.reset(token)


def from_output(cost: Cost, out: Any) -> None:
    """Cost a provider-style response, unless the step recorded its cost itself."""
    usage = getattr(out, "usage", None)
    if usage is None or cost["recorded"]:
        return
    tokens_in = _int(usage, "prompt_tokens", "input_tokens")
    tokens_out = _int(usage, "completion_tokens", "output_tokens")
    model = getattr(out, "model", None)
    name = model if isinstance(model, str) else cost["model"]
    what = f"the usage of the step's {type(out).__name__} output"
    _add(cost, price(name, tokens_in, tokens_out) or 0, tokens_in, tokens_out, what)
    cost["model"] = name


def _add(cost: Cost, micros: int, tokens_in: int, tokens_out: int, what: str) -> None:
    """Add to an attempt's cost, refusing what the journal cannot hold (before changing it)."""
    from letitloop.journal import MAX_MICROS, MAX_TOKENS

    total = (cost["usd_micros"] + micros, cost["in"] + tokens_in, cost["out"] + tokens_out)
    if min(total) < 0 or total[0] > MAX_MICROS or max(total[1:]) > MAX_TOKENS:
        raise ConfigError(
            f"{what} would make the attempt cost {total[0] / 1e6:,.2f} USD for {total[1]:,} "
            f"input and {total[2]:,} output tokens; the journal holds at most "
            f"{MAX_MICROS // 1_000_000:,} USD and {MAX_TOKENS:,} tokens of each kind per attempt",
            fix="check the numbers passed (a unit mix-up?); split very large work into steps",
        )
    cost["usd_micros"], cost["in"], cost["out"] = total


def journaled(cost: Cost | None) -> Cost | None:
    """The cost as the journal keeps it, or None when nothing was spent or counted."""
    if cost is None or not (cost["usd_micros"] or cost["in"] or cost["out"]):
        return None
    return {k: cost[k] for k in ("usd_micros", "in", "out", "model")}


def _int(usage: Any, *names: str) -> int:
    for name in names:
        value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0
