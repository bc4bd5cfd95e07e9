"""A wrong window is found out, end to end: a data-science session of 1–3 KB pastes through
litellm's real request bodies to servers on 127.0.0.1 that misbehave as real ones do — one
that refuses an over-long prompt with OpenAI's overflow body, one that cuts it to fit its
context and answers 200 under a window stated twice as large, one that keeps half its
context, one whose usage counts only the tokens not in its cache. Every turn is sent and
answered; no request after the window is found out exceeds what the server holds; the tool
schemas sent stay within their share of the window; the latest ask is in every request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nbagent import Agent, LiteLLMModel, RetryPolicy, Settings
from nbagent.engine import count_tools_tokens
from nbagent.testing import ScriptedSummarizer
from tests.helpers import COLUMNS, pasted_asks
from tests.openai_stub import CuttingServer, StubServer, UnderReportingServer, prompt_size

pytestmark = pytest.mark.real

TURNS = 40  # the fast run; the 300-turn one is marked slow
class Refusing(StubServer):
    """OpenAI's overflow body past its context (the stub's own 400)."""

    overflows = 0

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, payload = super().answer(body)
        self.overflows += status == 400
        return status, payload


# (server, the model's settings, the window the server really holds)
SERVERS = {
    # a loopback server that states none: 4,096 assumed, and it holds 4,096
    "refusing-4096": (lambda: Refusing(context=4_096), {}, 4_096),
    # llama-cpp-python's server: its default 2,048 assumed, and it holds 2,048
    "refusing-2048": (lambda: Refusing(context=2_048, info={"/v1/models": {"data": [
        {"id": "own-model", "object": "model", "owned_by": "me", "permissions": []}]}}),
        {}, 2_048),
    # told 16,384, it cuts to fit 4,096 (Ollama's newer runner, llama.cpp)
    "cutting-to-fit": (lambda: CuttingServer(context=4_096, keep="fit"),
                       {"max_context_tokens": 16_384}, 4_096),
    # told 16,384, it keeps half of its 6,144 (Ollama's older runner)
    "cutting-half": (lambda: CuttingServer(context=6_144, keep="half"),
                     {"max_context_tokens": 16_384}, 6_144),
    # told 8,192 (its real window), its usage counts only what it had not cached
    "under-reporting": (lambda: UnderReportingServer(context=8_192),
                        {"max_context_tokens": 8_192}, 8_192),
}


def notes(request: list[dict[str, Any]]) -> str:
    """A summarizer's notes: the columns the folded part shows."""
    shown = [c for c in COLUMNS if c in str(request[-1]["content"])]
    return f"- the user pasted tables of {', '.join(shown) or 'their data'}"


def run(server_name: str, turns: int) -> None:
    make, settings, holds = SERVERS[server_name]
    with make() as server:
        model = LiteLLMModel("openai/own-model", api_base=server.base_url,
                             api_key="sk-test-not-real")
        agent = Agent(model=model, namespace={}, archive=False,
                      settings=Settings(notebook_context=False, **settings),
                      retry=RetryPolicy(sleep=lambda s: None),
                      summarize=ScriptedSummarizer(default=notes))
        problems: list[str] = []
        for turn, ask in enumerate(pasted_asks(turns)):
            sent_before = len(server.requests)
            effective = agent.context_state().thresholds.effective_window
            result = agent.chat(ask)
            if result.stop_reason != "done":
                problems.append(f"turn {turn}: {result.stop_reason}: {result.stop_message}")
            bodies = server.requests[sent_before:]
            if not bodies or not all(json.dumps(ask)[1:-1] in json.dumps(b) for b in bodies):
                problems.append(f"turn {turn}: the latest ask was not in every request")
            # the window may be found out during the turn: its requests before that were
            # sized for the window it started with
            effective = max(effective, agent.context_state().thresholds.effective_window)
            tools = max((count_tools_tokens(b.get("tools", [])) for b in bodies), default=0)
            if tools > 0.16 * effective:
                problems.append(f"turn {turn}: tool schemas {tools} of {effective}")
    assert problems == [] and not agent.controller.breaker_open
    sizes = [prompt_size(body) for body in server.requests]
    window = agent.window()
    if isinstance(server, CuttingServer):
        assert 0 < sum(server.cut) <= 2  # found out within two requests
        last = max(i for i, cut in enumerate(server.cut) if cut)
        assert max(sizes[last + 1:]) <= holds  # never over what it holds again
        assert window.source.startswith("learned") and window.raw_window <= holds
    elif isinstance(server, UnderReportingServer):
        # its usage is never taken for a cut: the window stays the one it was told
        assert (window.raw_window, window.source) == (holds, "env")
        assert max(sizes) <= holds
    else:
        assert isinstance(server, Refusing) and server.overflows <= 2


@pytest.mark.parametrize("server_name", list(SERVERS))
def test_every_turn_is_sent_whatever_the_server_does(server_name: str) -> None:
    run(server_name, TURNS)


@pytest.mark.slow
@pytest.mark.parametrize("server_name", list(SERVERS))
def test_three_hundred_turns_whatever_the_server_does(server_name: str) -> None:
    run(server_name, 300)
