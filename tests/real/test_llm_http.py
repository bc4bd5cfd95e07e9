"""The whole path through litellm's real HTTP client and exception mapping, against
an OpenAI-compatible server on 127.0.0.1 that the test starts and stops."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nbagent import Agent, LiteLLMModel, ModelCallError, RetryPolicy, Settings, tool
from nbagent.testing import ScriptedSummarizer
from tests.openai_stub import StubServer

pytestmark = pytest.mark.real


@pytest.fixture
def server() -> Iterator[StubServer]:
    with StubServer(context=3_000) as stub:
        yield stub


@tool
def peek(note: str = "") -> str:
    """Look at the data."""
    return "sales_df has 3 rows and columns region, revenue"


def agent_for(server: StubServer, window: int = 3_000) -> Agent:
    model = LiteLLMModel("openai/stub-model", api_base=server.base_url, api_key="sk-test-not-real")
    return Agent(
        model=model,
        tools=[peek],
        builtin_tools=False,
        namespace={},
        settings=Settings(max_context_tokens=window),
        retry=RetryPolicy(sleep=lambda s: None),
        summarize=ScriptedSummarizer(default="- n"),
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_tool_call_round_trip_with_usage(server: StubServer, stream: bool) -> None:
    agent = agent_for(server)
    pieces: list[str] = []
    result = agent.chat("what is in sales_df?", on_text=pieces.append if stream else None)
    assert result.text == "I see: sales_df has 3 rows and columns region, "
    assert result.rounds == 1
    call = agent.history[2]["tool_calls"][0]
    assert call["function"] == {"name": "peek", "arguments": '{"note": "from the stub"}'}
    assert agent.history[3]["content"].startswith("sales_df has 3 rows")
    if stream:  # text arrived in pieces and tool-call deltas were assembled
        assert "".join(pieces) == result.text and len(pieces) > 1
        assert server.requests[0]["stream"] is True
    reported = server.requests[-1]
    assert reported["tools"][0]["function"]["name"] == "peek"


def test_the_context_state_follows_the_servers_prompt_count(server: StubServer) -> None:
    agent = agent_for(server)
    agent.chat("what is in sales_df?")
    reported = server.answer(server.requests[-1])[1]["usage"]["prompt_tokens"]
    state = agent.context_state()
    assert reported <= state.tokens <= reported * 1.25 + 50  # + the reply, estimated


def test_a_real_overflow_400_is_recovered_by_l4_and_retried(server: StubServer) -> None:
    agent = agent_for(server, window=200_000)  # we think it fits; the server knows better
    for t in range(8):
        agent.history.extend(
            [
                {"role": "user", "content": f"old question {t} " * 60},
                {"role": "assistant", "content": f"old answer {t} " * 60},
            ]
        )
    result = agent.chat("and now?")
    assert result.text.startswith("I see:")
    overflow = [d for d in result.decisions if d.trigger == "overflow"]
    assert overflow and overflow[0].action == "compacted"
    assert any(r.get("messages") for r in server.requests)


def test_an_unrecoverable_overflow_ends_with_the_actionable_message(server: StubServer) -> None:
    agent = agent_for(server, window=200_000)
    with pytest.raises(ModelCallError) as caught:
        agent.chat("x" * 20_000)  # one message alone is over the server's window
    assert caught.value.kind == "overflow" and "agent.compact()" in str(caught.value)
    assert (
        type(caught.value.__cause__).__name__ == "ContextWindowExceededError"
    )  # litellm's mapping
    assert agent.history[-1]["content"] == "x" * 20_000


def test_a_connection_error_is_retried_then_reported(monkeypatch: Any) -> None:
    with StubServer() as stub:
        base = stub.base_url
    model = LiteLLMModel(
        "openai/stub-model",
        api_base=base,
        api_key="sk-test-not-real",
        options={"max_retries": 0, "timeout": 5},
    )
    sleeps: list[float] = []
    agent = Agent(
        model=model,
        builtin_tools=False,
        namespace={},
        settings=Settings(),
        retry=RetryPolicy(max_attempts=3, sleep=sleeps.append),
        summarize=ScriptedSummarizer(),
    )
    with pytest.raises(ModelCallError, match="kept failing after 3 attempts"):
        agent.chat("hello?")
    assert len(sleeps) == 2
