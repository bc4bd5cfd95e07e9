"""A server that cuts an over-long prompt at the front and answers 200 OK (Ollama past its
context length), through litellm's real request path to a stub on 127.0.0.1: the session
notices from the usage, says so once, keeps within what the server reads, compacts and asks
again — streaming and not."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from nbagent import Agent, LiteLLMModel, RetryPolicy, Settings, tool
from nbagent.events import Retrying
from nbagent.testing import ScriptedSummarizer
from tests.openai_stub import CuttingServer, StubServer

pytestmark = pytest.mark.real

SYSTEM_MARK = "You are the truncation test assistant."
ROUNDS = 6


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
    with CuttingServer(context=2_048, mark=SYSTEM_MARK) as stub:
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


SERVED = 4_096  # what the cutting server holds (its own count: characters / 4)
TOLD = 32_768
LLAMA_PROPS = {"/v1/models": {"data": [{"id": "qwen", "owned_by": "llamacpp"}]},
               # a llama-server whose slots share n_ctx: /props says the whole, a request
               # gets a slot's share (and is cut to fit it)
               "/props": {"default_generation_settings": {"n_ctx": TOLD}}}
# how the window was stated: (the model, the settings, the window it states, its source)
STATED = {
    "env": ("openai/own-model", None, {"max_context_tokens": TOLD}, TOLD, "env"),
    "model": ("openai/own-model", TOLD, {}, TOLD, "server"),
    "litellm": ("openai/gpt-4o", None, {}, 128_000, "litellm"),
    "runtime": ("openai/qwen", None, {}, TOLD, "server: llama.cpp /props n_ctx"),
}


@pytest.mark.parametrize(("stated", "stream"), [
    ("env", False), ("env", True), ("model", False), ("litellm", False), ("runtime", False)],
    ids=["env", "env-stream", "model-object", "litellm-table", "runtime"])
def test_a_window_stated_above_the_servers_is_found_out_within_two_requests(
        stated: str, stream: bool) -> None:
    """Issue 42: told 32,768 against a server that cuts to fit 16,384, 27 of 39 requests
    were cut and the count drifted down with them. Whatever stated the window, at most two
    requests are cut: the first may pass unseen, the second is caught by its plateau; the
    window learned is what the server showed it holds, and no request after exceeds it."""
    name, window, settings, told, source = STATED[stated]
    with CuttingServer(context=SERVED, keep="fit", mark=SYSTEM_MARK,
                       info=LLAMA_PROPS if stated == "runtime" else None) as server:
        model = LiteLLMModel(name, api_base=server.base_url, api_key="sk-test-not-real",
                             context_window=window)
        agent = Agent(model=model, tools=[peek], builtin_tools=False, namespace={},
                      system=SYSTEM_MARK, settings=Settings(notebook_context=False, **settings),
                      retry=RetryPolicy(sleep=lambda s: None), archive=False,
                      summarize=ScriptedSummarizer(default="- the user explored sales_df"))
        assert (agent.window().raw_window, agent.window().source) == (told, source) or \
            stated == "runtime"  # a runtime's window is asked at the first chat
        ratios: list[float] = []
        results = []
        for turn in range(40):
            results.append(agent.chat(f"Turn {turn}: what about region {turn}? "
                                      + "and the revenue by store " * 40,
                                      on_text=(lambda _: None) if stream else None))
            if not any(server.cut):
                ratios.append(agent.session.tracker.ratio(name))
    assert [r.stop_reason for r in results] == ["done"] * 40
    assert sum(server.cut) <= 2 and any(server.cut)  # caught within two requests
    last_cut = max(i for i, cut in enumerate(server.cut) if cut)
    assert all(size <= SERVED for size in server.sizes[last_cut + 1:])  # never again over
    window = agent.window()
    assert window.raw_window == SERVED and window.source.startswith("learned")
    # the usage of a cut prompt never pulled the count down toward what the server kept
    # (issue 42: 0.97 to 0.43); whole reads of other text may move it a little
    assert agent.session.tracker.ratio(name) >= 0.9 * min(ratios)
    notices = [r.stop_message for r in results if "dropped the front" in str(r.stop_message)]
    assert len(notices) == 1  # said once
    assert f"llama-server -c {told}" in str(notices[0])
    assert f"OLLAMA_CONTEXT_LENGTH={told}" in str(notices[0])
    assert results[-1].text.startswith("[system prompt seen]")
