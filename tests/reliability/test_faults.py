"""Fault injection through the fake model and fake tools: each ends with a valid
history, nothing lost from the archive, and a clear message."""

from __future__ import annotations

import time
from typing import Any

import pytest

from nbagent import Agent, ModelCallError, Settings, tool, validate_messages
from nbagent._archive import read_records
from nbagent.testing import ScriptedModel, ScriptedSummarizer, Step, calls, provider_error, reply
from tests.helpers import nine_sections

WINDOW = 4_096


def session(model: ScriptedModel, summarize: Any = None, **options: Any) -> Agent:
    return Agent(model=model, namespace={}, model_info=None,
                 settings=options.pop("settings", Settings(max_context_tokens=WINDOW)),
                 summarize=summarize or ScriptedSummarizer(default=nine_sections()), **options)


def archived(agent: Agent) -> list[dict[str, Any]]:
    assert agent.archive is not None
    return [r["message"] for r in read_records(agent.archive.path) if r["kind"] == "message"]


def fill(agent: Agent, turns: int = 10) -> None:
    for turn in range(turns):
        agent.chat(f"question {turn}: " + "explain the revenue trend " * 60)


def slow_summary(messages: list[dict[str, Any]]) -> str:
    raise TimeoutError("the summarizer timed out")


@pytest.mark.parametrize(
    "summarize",
    [
        ScriptedSummarizer(default=RuntimeError("summarizer down")),
        slow_summary,
        ScriptedSummarizer(default=""),
        ScriptedSummarizer(default="Error: 529 overloaded"),
        ScriptedSummarizer(default="## 1. Primary Request and Intent\nhalf a summary"),
    ],
    ids=["raises", "times-out", "empty", "error-string", "half-formed"],
)
def test_a_failing_summarizer_never_breaks_the_chat(summarize: Any) -> None:
    agent = session(ScriptedModel(default=reply("an answer " * 40)), summarize)
    fill(agent)
    validate_messages(agent.history.messages)
    everything = archived(agent)
    assert len(everything) == 1 + 10 * 2  # every message, whatever compaction did
    decisions = agent.controller.decisions
    assert decisions and all(d.reason for d in decisions)  # each says what happened


def test_the_provider_failing_mid_stream_is_retried() -> None:
    broken = Step(text="partial answer", fail_after_text=provider_error(503, "connection reset"))
    model = ScriptedModel([broken, reply("the whole answer")])
    sleeps: list[float] = []
    from nbagent import RetryPolicy

    agent = session(model, retry=RetryPolicy(sleep=sleeps.append))
    pieces: list[str] = []
    result = agent.chat("go", on_text=pieces.append)
    assert result.text == "the whole answer" and len(sleeps) == 1
    assert archived(agent)[-1] == {"role": "assistant", "content": "the whole answer"}


def test_a_provider_that_keeps_failing_ends_with_a_clear_message() -> None:
    agent = session(ScriptedModel(default=provider_error(500, "internal error")),
                    retry=__import__("nbagent").RetryPolicy(max_attempts=2, sleep=lambda s: None))
    with pytest.raises(ModelCallError, match="failed: ProviderError: internal error"):
        agent.chat("hello")
    assert archived(agent)[-1] == {"role": "user", "content": "hello"}


@tool
def hang() -> str:
    """Never returns in time."""
    time.sleep(2)
    return "late"


@tool
def huge() -> str:
    """Returns 50 MB."""
    return "x" * 50_000_000


@tool
def raw() -> bytes:
    """Returns bytes that are not UTF-8."""
    return b"\xff\xfe revenue \x80"


@tool
def broken() -> str:
    """Raises."""
    raise OSError("disk full")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("hang", "Error: hang did not finish within 0.2 s and was abandoned."),
     ("huge", "characters omitted"),
     ("raw", "revenue"),
     ("broken", "Error: broken raised OSError: disk full")],
    ids=["hangs", "50MB", "non-utf8", "raises"],
)
def test_misbehaving_tools_become_clear_results(name: str, expected: str) -> None:
    model = ScriptedModel([calls((name, {})), reply("handled")])
    agent = session(model, tools=[hang, huge, raw, broken], builtin_tools=False,
                    settings=Settings(max_context_tokens=WINDOW, tool_timeout_s=0.2))
    assert agent.chat("try it").text == "handled"
    result = [m for m in agent.history if m["role"] == "tool"][0]["content"]
    assert expected in result and len(result) < 20_000
    validate_messages(agent.history.messages)
    assert any(m["role"] == "tool" for m in archived(agent))
