"""A server that cuts an over-long prompt at the front and answers 200 OK (Ollama past its
context length), through litellm's real request path to a stub on 127.0.0.1: the session
notices from the usage, says so once, keeps within what the server reads, compacts and asks
again — streaming and not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nbagent import Agent, LiteLLMModel, RetryPolicy, Settings, tool
from nbagent.events import Retrying
from nbagent.testing import ScriptedSummarizer
from tests.openai_stub import StubServer

pytestmark = pytest.mark.real

SYSTEM_MARK = "You are the truncation test assistant."
ROUNDS = 6


class CuttingServer(StubServer):
    """Ollama's behaviour past its context (`context`, its num_ctx): the front of the
    prompt is dropped (the tools, the system prompt, the oldest messages) until what is
    left fits half the context, and the usage reports what was read (num_ctx / 2 + 2)."""

    def __init__(self, context: int) -> None:
        super().__init__(context=10**9)  # the base class never refuses
        self.num_ctx = context
        self.cut: list[bool] = []

    @staticmethod
    def size(body: dict[str, Any]) -> int:
        return (sum(len(json.dumps(m)) for m in body["messages"])
                + sum(len(json.dumps(t)) for t in body.get("tools", []))) // 4

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        read = self.size(body)
        cut = read > self.num_ctx
        self.cut.append(cut)
        if cut:
            body = {**body, "tools": []}
            messages = list(body["messages"])
            while len(messages) > 1 and self.size({"messages": messages}) > self.num_ctx // 2:
                messages.pop(0)
            body["messages"] = messages
            read = self.num_ctx // 2 + 2
        status, payload = super().answer(body)
        saw = any(SYSTEM_MARK in str(m.get("content")) for m in body["messages"])
        message = payload["choices"][0]["message"]
        if message.get("content"):
            message["content"] = f"[system prompt {'seen' if saw else 'lost'}] {message['content']}"
        payload["usage"] = {"prompt_tokens": read, "completion_tokens": 10,
                            "total_tokens": read + 10}
        return status, payload


@tool
def peek(note: str = "") -> str:
    """Look at the data."""
    return "sales_df has 3 rows and columns region, revenue"


def agent_for(server: StubServer) -> Agent:
    """A model whose server states no window (nbagent assumes one until it learns)."""
    model = LiteLLMModel("openai/own-model", api_base=server.base_url, api_key="sk-test-not-real")
    agent = Agent(model=model, tools=[peek], builtin_tools=False, namespace={},
                  system=SYSTEM_MARK, settings=Settings(),
                  retry=RetryPolicy(sleep=lambda s: None),
                  summarize=ScriptedSummarizer(default="- the user explored sales_df"),
                  archive=False)
    for t in range(ROUNDS):  # an earlier conversation, long enough to be cut
        agent.history.extend([
            {"role": "user", "content": f"old question {t} about sales_df " * 25},
            {"role": "assistant", "content": f"old answer {t} on region and revenue " * 25}])
    return agent


@pytest.fixture
def server() -> Iterator[CuttingServer]:
    with CuttingServer(context=2_048) as stub:
        yield stub


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_prompt_cut_at_the_front_is_noticed_compacted_and_asked_again(
        server: CuttingServer, stream: bool) -> None:
    agent = agent_for(server)
    assert agent.window().raw_window > 2_048  # it does not know the server's context
    retries: list[Retrying] = []
    agent.events.subscribe(lambda e: retries.append(e) if isinstance(e, Retrying) else None)
    pieces: list[str] = []
    result = agent.chat("what is in sales_df?", on_text=pieces.append if stream else None)
    assert server.cut[0] and not server.cut[-1]  # the first request was cut, the last not
    assert result.text.startswith("[system prompt seen] I see: sales_df has 3 rows")
    assert "[system prompt lost]" not in json.dumps(agent.history.messages)  # never kept
    notice = str(result.stop_message)
    assert "dropped the front of the prompt" in notice and "OLLAMA_CONTEXT_LENGTH" in notice
    assert "num_ctx" in notice
    window = agent.window()
    assert window.raw_window <= 2 * (2_048 // 2 + 2) and window.source.startswith("learned")
    assert any(d.action == "compacted" for d in result.decisions)
    assert len(retries) == 1  # a display clears what streamed of the cut reply
    if stream:
        assert server.requests[0]["stream"] is True
    # said once a session: the next turns are not cut, and say nothing more
    again = agent.chat("and the revenue by region?", on_text=pieces.append if stream else None)
    assert again.stop_message is None and not any(server.cut[-2:])
