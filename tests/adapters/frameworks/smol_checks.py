"""Checks of the smolagents adapter's edges, run in ``.venvs/smolagents`` by
tests/adapters/test_smolagents_api.py: ``python smol_checks.py NAME`` runs ``check_NAME`` on an
in-memory journal and exits 0 when it holds (an AssertionError's traceback otherwise)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from smolagents import CodeAgent, ToolCallingAgent, tool
from smolagents.local_python_executor import PythonExecutor
from smolagents.models import (
    ChatMessage,
    ChatMessageStreamDelta,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.monitoring import TokenUsage

from letitloop import Budget, MemoryJournal, approval
from letitloop.adapters.smolagents import SmolagentsWALCallback, durable_agent
from letitloop.errors import (
    ApprovalPending,
    BudgetExceeded,
    ConfigError,
    NonDeterminismError,
)

CALLS: list[str] = []


@tool
def lookup(city: str) -> str:
    """Look up a fact about a city.

    Args:
        city: the city
    """
    CALLS.append(f"lookup {city}")
    return f"{city} is nice"


@tool
def publish(text: str) -> str:
    """Publish a text once a person approved it.

    Args:
        text: what to publish
    """
    decision = approval("publish", {"text": text}, wait=False)
    CALLS.append(f"publish {decision.approved}")
    return "published" if decision.approved else "not published"


class Scripted(Model):
    """Answers ``script[i]``, i counting the assistant messages; raises where it says so."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(model_id="scripted-1")
        self.script = script

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        i = sum(1 for m in messages if m.role == MessageRole.ASSISTANT)
        CALLS.append(f"model {i}")
        answer = self.script[i]
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, str):
            return ChatMessage(role=MessageRole.ASSISTANT, content=answer)
        name, args = answer
        call = ChatMessageToolCall(
            id=f"c{i}",
            type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=args),
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"step {i}", tool_calls=[call])


def code(*snippets: str) -> list[Any]:
    return [f"Thought: go.\n<code>\n{s}\n</code>" for s in snippets]


def raises(fn: Any, error: type[BaseException], *words: str) -> BaseException:
    try:
        fn()
    except error as exc:
        for word in words:
            assert word in str(exc), f"{word!r} not in {exc}"
        return exc
    raise AssertionError(f"{fn} did not raise {error.__name__}")


class Streaming(Scripted):
    """Streams each answer in parts of 8 characters, the last part carrying the usage."""

    def generate_stream(self, messages: list[Any], **kwargs: Any) -> Iterator[Any]:
        text = Scripted.generate(self, messages).content  # not the journaled generate
        for n in range(0, len(text), 8):
            yield ChatMessageStreamDelta(content=text[n : n + 8])
        yield ChatMessageStreamDelta(token_usage=TokenUsage(input_tokens=50, output_tokens=5))


def check_a_streaming_agent_resumes() -> None:
    journal = MemoryJournal()
    script: list[Any] = code("x = lookup(city='Oslo')", "final_answer(x + '.')")
    script.insert(1, RuntimeError("the stream broke"))
    model = Streaming(script)
    agent = CodeAgent(tools=[lookup], model=model, stream_outputs=True, verbosity_level=0)
    durable = durable_agent(agent, run_id="s", journal=journal)
    raises(lambda: durable.run("go"), Exception, "the stream broke")
    del script[1]
    assert durable.run("go") == "Oslo is nice."
    assert CALLS == ["model 0", "lookup Oslo", "model 1", "model 1"]
    detail = journal.get_run("smolagents:CodeAgent:s")
    models = [a for a in detail.attempts if a.name == "model:CodeAgent"]
    assert [(a.position, a.status) for a in models] == [
        (0, "completed"),
        (2, "failed"),
        (2, "completed"),
    ]
    assert detail.run.tokens == 2 * 55  # the usage of the streamed parts, per answer
    raises(lambda: durable.run("go", stream=True), ConfigError, "stream")


class Planning(Model):
    """Plans when asked (stop at ``<end_plan>``), else answers by its code answers so far."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(model_id="scripted-1")
        self.script = script

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        if "<end_plan>" in (kwargs.get("stop_sequences") or []):
            CALLS.append("plan")
            return ChatMessage(role=MessageRole.ASSISTANT, content="1. look it up\n<end_plan>")
        done = sum(
            1 for m in messages if m.role == MessageRole.ASSISTANT and "<code>" in str(m.content)
        )
        CALLS.append(f"model {done}")
        answer = self.script[done]
        if isinstance(answer, BaseException):
            raise answer
        return ChatMessage(role=MessageRole.ASSISTANT, content=answer)


def check_planning_calls_replay_too() -> None:
    journal = MemoryJournal()
    script: list[Any] = code(
        "x = lookup(city='Oslo')", "y = lookup(city='Rome')", "final_answer(x + y)"
    )
    script.insert(2, RuntimeError("crash"))
    agent = CodeAgent(
        tools=[lookup], model=Planning(script), planning_interval=2, verbosity_level=0
    )
    durable = durable_agent(agent, run_id="plan", journal=journal)
    raises(lambda: durable.run("go"), Exception, "crash")
    first = list(CALLS)
    assert first == ["plan", "model 0", "lookup Oslo", "model 1", "lookup Rome", "plan", "model 2"]
    del script[2]
    assert durable.run("go") == "Oslo is niceRome is nice"
    assert CALLS[len(first) :] == ["model 2"]  # both plans and the tools replayed
    names = [a.name for a in journal.get_run("smolagents:CodeAgent:plan").attempts]
    assert names.count("model:CodeAgent") == 6  # 2 plans, 3 answers, 1 failed attempt


class Shared(Model):
    """One model for a manager and the researcher it manages, each with its own script."""

    def __init__(self, manager: list[Any], researcher: list[Any]) -> None:
        super().__init__(model_id="scripted-1")
        self.manager, self.researcher = Scripted(manager), Scripted(researcher)

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        mine = any("named 'researcher'" in str(m.content) for m in messages)
        return (self.researcher if mine else self.manager).generate(messages, **kwargs)


def check_a_shared_model_names_each_call_after_its_agent() -> None:
    journal = MemoryJournal()
    model = Shared(
        code("r = researcher(task='Oslo?')", "final_answer(r)"),
        [("lookup", {"city": "Oslo"}), ("final_answer", {"answer": "cold"})],
    )
    researcher = ToolCallingAgent(
        tools=[lookup],
        model=model,
        name="researcher",
        description="Finds facts.",
        verbosity_level=0,
    )
    manager = CodeAgent(
        tools=[], model=model, managed_agents=[researcher], name="boss", verbosity_level=0
    )
    answer = durable_agent(manager, run_id="m", journal=journal).run("go")
    assert answer.endswith("cold"), answer
    names = [a.name for a in journal.get_run("smolagents:boss:m").attempts]
    assert names == [
        "model:boss",
        "agent:researcher",
        "model:researcher",
        "tool:lookup",
        "model:researcher",
        "model:boss",
    ], names


class Metered(Scripted):
    """Scripted answers that each report 100 input and 10 output tokens."""

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        message = super().generate(messages, **kwargs)
        message.token_usage = TokenUsage(input_tokens=100, output_tokens=10)
        return message


def check_a_budget_stops_the_agent_and_a_raised_one_continues_it() -> None:
    journal = MemoryJournal()
    model = Metered(code("x = lookup(city='Oslo')", "y = lookup(city='Rome')", "final_answer(y)"))
    agent = CodeAgent(tools=[lookup], model=model, verbosity_level=0)
    durable = durable_agent(agent, run_id="b", journal=journal, budget=Budget(tokens=150))
    raises(lambda: durable.run("go"), BudgetExceeded, "budget", "lil runs budget")
    run_id = "smolagents:CodeAgent:b"
    assert journal.get_run(run_id).run.status == "suspended"
    # 220 tokens spent after the second answer: the run stops before its next step, the tool
    assert CALLS == ["model 0", "lookup Oslo", "model 1"], CALLS
    journal.set_budget(run_id, "tester", tokens=1000)
    assert durable.run("go") == "Rome is nice"
    assert CALLS[3:] == ["lookup Rome", "model 2"]


def check_refuses_a_remote_executor() -> None:
    class Remote(PythonExecutor):
        def send_tools(self, tools: Any) -> None: ...
        def send_variables(self, variables: Any) -> None: ...
        def __call__(self, code_action: str) -> Any: ...

    agent = CodeAgent(tools=[], model=Scripted([]), executor=Remote(), verbosity_level=0)
    raises(lambda: durable_agent(agent, run_id="r"), ConfigError, "Remote", 'executor_type="local"')


def check_requires_a_run_id() -> None:
    agent = CodeAgent(tools=[], model=Scripted([]), verbosity_level=0)
    raises(lambda: durable_agent(agent, run_id=""), ConfigError, "run_id")


def check_tools_and_models_outside_a_run_are_unchanged() -> None:
    model = Scripted(code("final_answer(lookup(city='Oslo'))"))
    agent = CodeAgent(tools=[lookup], model=model, verbosity_level=0)
    durable_agent(agent, run_id="o", journal=MemoryJournal())
    assert lookup(city="Bern") == "Bern is nice"  # no run: the tool just runs
    assert agent.run("plain smolagents, not durable") == "Oslo is nice"
    assert CALLS == ["lookup Bern", "model 0", "lookup Oslo"]


def check_the_alias_wraps_an_agent() -> None:
    journal = MemoryJournal()
    wal = SmolagentsWALCallback(session_id="s1", journal=journal)
    agent = wal.wrap_agent(
        ToolCallingAgent(
            tools=[lookup],
            model=Scripted([("lookup", {"city": "Rome"}), ("final_answer", {"answer": "ok"})]),
            verbosity_level=0,
        )
    )
    assert agent.run("find") == "ok"
    assert [r.run_id for r in journal.list_runs()] == ["smolagents:ToolCallingAgent:s1"]
    raises(lambda: wal(None), ConfigError, "wrap_agent")


def check_wrapping_twice_journals_once() -> None:
    journal = MemoryJournal()
    agent = CodeAgent(
        tools=[lookup],
        model=Scripted(code("x = lookup(city='Oslo')", "final_answer(x)")),
        verbosity_level=0,
    )
    first = durable_agent(agent, run_id="a", journal=journal)
    again = durable_agent(agent, run_id="b", journal=journal)
    assert again.run("go") == "Oslo is nice"
    assert first.run("go") == "Oslo is nice"  # the older wrapper still journals everything
    for run in ("a", "b"):
        names = [a.name for a in journal.get_run(f"smolagents:CodeAgent:{run}").attempts]
        assert names == ["model:CodeAgent", "tool:lookup", "model:CodeAgent"], (run, names)


def check_a_failed_model_call_runs_again_and_the_rest_replays() -> None:
    journal = MemoryJournal()
    script: list[Any] = code("x = lookup(city='Oslo')", "final_answer(x + '!')")
    script.insert(1, RuntimeError("the provider is down"))
    agent = durable_agent(
        CodeAgent(tools=[lookup], model=Scripted(script), verbosity_level=0),
        run_id="f",
        journal=journal,
    )
    raises(lambda: agent.run("go"), Exception, "the provider is down")
    assert journal.get_run("smolagents:CodeAgent:f").run.status == "failed"
    del script[1]  # the provider is back
    assert agent.run("go") == "Oslo is nice!"
    assert CALLS == ["model 0", "lookup Oslo", "model 1", "model 1"]


def check_a_changed_workflow_is_not_swallowed() -> None:
    journal = MemoryJournal()
    script: list[Any] = code("x = lookup(city=city)", "final_answer(x)")
    script.insert(1, RuntimeError("crash"))
    agent = CodeAgent(tools=[lookup], model=Scripted(script), verbosity_level=0)
    agent.state["city"] = "Oslo"  # a variable the agent's code reads, outside the journal
    durable = durable_agent(agent, run_id="n", journal=journal)
    raises(lambda: durable.run("go"), Exception, "crash")
    agent.state["city"] = "Bern"  # changed: the replayed code now calls the tool differently
    raises(lambda: durable.run("go"), NonDeterminismError, "tool:lookup", "lil runs reset")
    assert CALLS == ["model 0", "lookup Oslo", "model 1"]  # replayed model 0, no tool ran


def check_a_tool_asks_for_approval() -> None:
    journal = MemoryJournal()
    model = Scripted([("publish", {"text": "hello"}), ("final_answer", {"answer": "done"})])
    agent = durable_agent(
        ToolCallingAgent(tools=[publish], model=model, verbosity_level=0),
        run_id="p",
        journal=journal,
    )
    raises(lambda: agent.run("publish it"), ApprovalPending, "publish")
    run_id = "smolagents:ToolCallingAgent:p"
    assert journal.get_run(run_id).run.status == "suspended"
    (pending,) = journal.approvals(status="pending", run_id=run_id)
    journal.decide_approval(pending.id, approved=True, by="tester")
    assert agent.run("publish it") == "done"
    assert CALLS == ["model 0", "publish True", "model 1"]  # model 0 replayed, not asked again


if __name__ == "__main__":
    globals()[f"check_{sys.argv[1]}"]()
