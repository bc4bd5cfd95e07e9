"""The model seam (`models/_llm`): what `LiteLLMModel.send` puts on the wire through
litellm's real request path (its options, tools and tool choice, the cache plan's session
key, a stream or not) against the stub server on 127.0.0.1; which models send with a cache
plan and which take notes; `call_model`'s retries (a transient error is retried and
announced, an auth error is not); and the summarizer built on it (its text and cost, its
time bound)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from nbagent import CompactionFailed, LiteLLMModel, RetryPolicy
from nbagent.agent.models import call_model, summarizer, takes_notes
from nbagent.agent.providers import CachePlan
from nbagent.events import EventStream, Retrying
from nbagent.testing import ProviderError, ScriptedModel, provider_error, reply
from tests.openai_stub import StubServer

TOOL = {"type": "function", "function": {"name": "peek", "description": "Look.",
                                         "parameters": {"type": "object", "properties": {}}}}
NO_WAIT = RetryPolicy(sleep=lambda seconds: None)


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def stub_model(stub: StubServer, name: str = "openai/gpt-4o-mini") -> LiteLLMModel:
    return LiteLLMModel(name, api_base=stub.base_url, api_key="sk-test-not-real",
                        options={"temperature": 0.25, "max_tokens": 77})


def test_send_passes_the_options_tools_and_choice_and_reads_the_reply(
        stub: StubServer) -> None:
    done = stub_model(stub).send([{"role": "user", "content": "hi"}], [TOOL], on_text=None,
                                 tool_choice="required")
    [sent] = stub.requests
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("gpt-4o-mini", 0.25, 77)
    assert sent["tools"][0]["function"]["name"] == "peek"
    assert sent["tool_choice"] == "required" and not sent.get("stream")
    assert done.message["tool_calls"][0]["function"] == {
        "name": "peek", "arguments": '{"note": "from the stub"}'}
    assert done.finish_reason == "tool_calls"
    assert done.usage is not None and done.usage.output_tokens == 10
    assert done.cost is not None and done.cost > 0  # gpt-4o-mini is in litellm's price map


def test_no_tools_sends_no_tool_choice_and_a_stream_arrives_in_pieces(stub: StubServer) -> None:
    pieces: list[str] = []
    done = stub_model(stub).send([{"role": "user", "content": "hello there"}], [],
                                 on_text=pieces.append, tool_choice="required")
    [sent] = stub.requests
    assert sent["stream"] is True and "tools" not in sent and "tool_choice" not in sent
    assert done.message == {"role": "assistant", "content": "I see: hello there"}
    assert "".join(pieces) == "I see: hello there" and len(pieces) > 1


def test_a_cache_plan_sends_the_sessions_key_to_openai(stub: StubServer) -> None:
    messages = [{"role": "user", "content": "hi"}]
    stub_model(stub).send(messages, [], on_text=None,
                          plan=CachePlan(stable=1, prefix_tokens=[10], key="nbagent-session-1"))
    stub_model(stub).send(messages, [], on_text=None)
    assert [r.get("prompt_cache_key") for r in stub.requests] == ["nbagent-session-1", None]


def test_only_models_that_send_through_litellm_take_a_cache_plan() -> None:
    from nbagent import LiteLLMModel
    from nbagent.agent.models import takes_cache_plan
    from nbagent.local import LocalModel

    assert takes_cache_plan(LiteLLMModel("anthropic/claude-sonnet-4-5"))
    assert not takes_cache_plan(ScriptedModel())
    assert LocalModel.complete is not LiteLLMModel.complete  # its own: sent as it is


@pytest.mark.parametrize(("name", "notes"), [
    ("anthropic/claude-sonnet-4-5", True), ("openai/gpt-4o", True),
    ("deepseek/deepseek-chat", True),
    ("openai/my-own-server-model", False),  # unknown to litellm: a server of one's own
    ("ollama/llama3", False), ("gemini/gemini-2.5-flash", False)])
def test_notes_go_to_known_models_at_providers_that_cache_prompts(name: str,
                                                                  notes: bool) -> None:
    assert takes_notes(LiteLLMModel(name)) is notes


def test_call_model_retries_a_transient_error_and_announces_each_retry() -> None:
    model = ScriptedModel([provider_error(429, "slow down", retry_after=3),
                           provider_error(503, "overloaded"), reply("done")])
    events = EventStream()
    seen: list[Retrying] = []
    events.subscribe(lambda event: seen.append(event) if isinstance(event, Retrying) else None)
    waited: list[float] = []
    policy = RetryPolicy(sleep=waited.append, max_wait_s=10.0)
    done = call_model(model, [{"role": "user", "content": "hi"}], [], policy=policy,
                      events=events)
    assert done.message["content"] == "done"
    assert [e.attempt for e in seen] == [1, 2]
    assert waited[0] == 3.0  # the provider's Retry-After, not the backoff
    assert "slow down" in seen[0].error
    model.assert_consumed()


def test_call_model_does_not_retry_an_auth_error() -> None:
    model = ScriptedModel([provider_error(401, "invalid api key"), reply("never")])
    with pytest.raises(ProviderError, match="invalid api key"):
        call_model(model, [{"role": "user", "content": "hi"}], [], policy=NO_WAIT)
    assert len(model.requests) == 1


def test_call_model_stops_after_its_attempts() -> None:
    model = ScriptedModel([provider_error(503, "busy")] * 5)
    with pytest.raises(ProviderError, match="busy"):
        call_model(model, [{"role": "user", "content": "hi"}], [],
                   policy=RetryPolicy(max_attempts=3, sleep=lambda seconds: None))
    assert len(model.requests) == 3


def test_a_summarizer_answers_with_the_models_text_and_cost_and_sends_no_tools() -> None:
    model = ScriptedModel([reply("## 1. Primary Request", cost=0.002)])
    summary = summarizer(model, NO_WAIT)([{"role": "user", "content": "summarize"}])
    assert (summary.text, summary.cost) == ("## 1. Primary Request", 0.002)
    assert model.tools_seen == [[]]


def test_a_summarizer_that_hangs_fails_the_compaction_at_its_time_bound() -> None:
    gate = threading.Event()

    def hang(messages: object) -> str:
        gate.wait(5)
        return "too late"

    summarize = summarizer(ScriptedModel([hang]), NO_WAIT, timeout=lambda: 0.2)
    try:
        with pytest.raises(CompactionFailed, match="did not answer within 0.2 s"):
            summarize([{"role": "user", "content": "summarize"}])
    finally:
        gate.set()
