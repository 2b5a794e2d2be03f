"""A value of every kind LangGraph's JsonPlus serializer encodes, and a user's own types.

``values()`` covers each branch of ``langgraph.checkpoint.serde.jsonplus._msgpack_default``
(pydantic v2 and v1 models, secrets, namedtuples, paths, patterns, UUIDs, decimals, sets,
deques, IP addresses, dates and times, zones, enums, ``Send``, dataclasses, store items,
exceptions) plus the LangChain and LangGraph types graphs keep in their state (agent actions,
messages, documents, interrupts, commands). The user types are module-level classes of this
module, as an application's would be. numpy arrays are left out: numpy is not installed here.
"""

from __future__ import annotations

import enum
import re
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from ipaddress import (
    IPv4Address,
    IPv4Interface,
    IPv4Network,
    IPv6Address,
    IPv6Interface,
    IPv6Network,
)
from pathlib import Path
from typing import Any, NamedTuple
from uuid import UUID
from zoneinfo import ZoneInfo

import pydantic
import pydantic.v1
from langchain_core.agents import AgentAction, AgentActionMessageLog, AgentFinish, AgentStep
from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.store.base import Item
from langgraph.types import Command, Interrupt, Send


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(NamedTuple):
    x: int
    y: int


@dataclass
class Line:
    sku: str
    price: Decimal
    tags: list[str] = field(default_factory=list)


class Customer(pydantic.BaseModel):
    name: str
    since: date


class Order(pydantic.BaseModel):
    """A pydantic model holding other rich values, as graph state often does."""

    id: UUID
    customer: Customer
    total: Decimal
    color: Color
    notes: list[str] = []


class LegacyOrder(pydantic.v1.BaseModel):
    id: int
    label: str


def values() -> dict[str, Any]:
    """One value of each kind, by name."""
    when = datetime(2026, 12, 7, 9, 30, 15, 123456)
    action = AgentAction(tool="search_api", tool_input="query", log="tool:search_api:query")
    return {
        # pydantic v2 models: the user's own and LangChain's
        "pydantic": Order(
            id=UUID(int=7),
            customer=Customer(name="ada", since=date(2020, 1, 2)),
            total=Decimal("12.50"),
            color=Color.BLUE,
            notes=["gift"],
        ),
        "agent_action": action,
        "agent_finish": AgentFinish(return_values={"answer": "42"}, log="finish:42"),
        "agent_step": AgentStep(action=action, observation="result for query"),
        "agent_action_log": AgentActionMessageLog(
            tool="t", tool_input={"a": 1}, log="l", message_log=[AIMessage(content="m")]
        ),
        "steps": [[action, "result for query"]],
        "human": HumanMessage(content="hi", id="h1"),
        "ai": AIMessage(
            content="", id="a1", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}]
        ),
        "tool": ToolMessage(content="42", tool_call_id="c1", id="t1"),
        "system": SystemMessage(content="be brief", id="s1"),
        "remove": RemoveMessage(id="h1"),
        "document": Document(page_content="text", metadata={"source": "a.txt"}),
        # pydantic v1, secrets
        "pydantic_v1": LegacyOrder(id=3, label="old"),
        "secret": pydantic.SecretStr("hunter2"),
        # namedtuple, path, pattern, UUID, Decimal
        "namedtuple": Point(1, 2),
        "path": Path("/srv/data/file.txt"),
        "pattern": re.compile(r"^a+b$", re.IGNORECASE),
        "uuid": UUID("12345678-1234-5678-1234-567812345678"),
        "decimal": Decimal("3.14159265358979323846"),
        # collections
        "set": {1, 2, 3},
        "frozenset": frozenset({"a", "b"}),
        "deque": deque([1, 2, 3]),
        # IP addresses
        "ipv4": IPv4Address("192.0.2.1"),
        "ipv4_interface": IPv4Interface("192.0.2.1/24"),
        "ipv4_network": IPv4Network("192.0.2.0/24"),
        "ipv6": IPv6Address("2001:db8::1"),
        "ipv6_interface": IPv6Interface("2001:db8::1/64"),
        "ipv6_network": IPv6Network("2001:db8::/64"),
        # dates, times and zones
        "datetime": when,
        "datetime_tz": when.replace(tzinfo=ZoneInfo("Europe/Paris")),
        "datetime_utc": when.replace(tzinfo=UTC),
        "date": date(2026, 12, 7),
        "time": time(9, 30, 15, 1234, tzinfo=timezone(timedelta(hours=2))),
        "timedelta": timedelta(days=2, seconds=5, microseconds=7),
        "timezone": timezone(timedelta(hours=-5), "EST"),
        "zoneinfo": ZoneInfo("Europe/Paris"),
        # enums, Send, dataclasses, store items
        "enum": Color.RED,
        "send": Send("node", {"x": 1}),
        "dataclass": Line(sku="A-1", price=Decimal("9.99"), tags=["x"]),
        "interrupt": Interrupt(value={"question": "publish?"}, id="i1"),
        "command": Command(resume="yes", update={"k": 1}),
        "item": Item(
            value={"v": 1},
            key="k",
            namespace=("users", "1"),
            created_at=when.replace(tzinfo=UTC),
            updated_at=when.replace(tzinfo=UTC),
        ),
        # plain values, and what JsonPlus does with an exception (its repr)
        "nested": {"a": [1, 2.5, None, True, "s"], 3: b"\x00\x01"},
        "exception": ValueError("boom"),
    }


# kinds that do not come back as the object that was saved, with any saver (InMemorySaver's
# serializer too): an exception is saved as its repr, the messages of an AgentActionMessageLog
# come back as BaseMessage, a Command's ``goto=()`` as ``[]`` (msgpack has one array type)
NOT_ROUND_TRIPPED = frozenset({"exception", "agent_action_log", "command"})


class Draft(pydantic.BaseModel):
    """The state of the functional-API test: a pydantic model in and out of a task."""

    text: str
    reviewer: str | None = None
