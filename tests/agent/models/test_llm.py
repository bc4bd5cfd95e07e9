"""The model seam (`models/_llm`): what `LiteLLMModel.send` puts on the wire through
litellm's real request path (its options, tools and tool choice, the cache plan's session
key, a stream or not) against the stub server on 127.0.0.1; which models send with a cache
plan and which take notes. Calling a model with retries is tests/agent/models/test_call.py's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nbagent import Agent, LiteLLMModel
from nbagent.agent.models import takes_notes
from nbagent.agent.providers import CachePlan
from nbagent.testing import ScriptedModel
from tests.openai_stub import StubServer

TOOL = {"type": "function", "function": {"name": "peek", "description": "Look.",
                                         "parameters": {"type": "object", "properties": {}}}}


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


def test_an_option_the_model_refuses_stops_the_request_unless_litellm_may_drop_it(
        stub: StubServer) -> None:
    # docs/models.md: o-series models take no temperature but 1; `drop_params` leaves it out
    ask = [{"role": "user", "content": "hi"}]
    refusing = LiteLLMModel("openai/o3-mini", api_base=stub.base_url, api_key="sk-test",
                            options={"temperature": 0.2, "seed": 7})
    with pytest.raises(Exception, match="temperature") as raised:
        refusing.send(ask, [], on_text=None)
    assert type(raised.value).__name__ == "UnsupportedParamsError" and not stub.requests
    refusing.options["drop_params"] = True
    refusing.send(ask, [], on_text=None)
    [sent] = stub.requests
    assert "temperature" not in sent and sent["seed"] == 7


@pytest.mark.parametrize("on_text", [None, lambda text: None], ids=["whole", "streamed"])
def test_prices_given_in_the_options_price_a_model_litellm_does_not_know(
        stub: StubServer, on_text: Any) -> None:
    ask = [{"role": "user", "content": "hi"}]
    unknown = LiteLLMModel("openai/our-finetune", api_base=stub.base_url, api_key="sk-test")
    assert unknown.send(ask, [], on_text=on_text).cost is None  # not in litellm's map
    priced = LiteLLMModel("openai/our-finetune", api_base=stub.base_url, api_key="sk-test",
                          options={"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6})
    done = priced.send(ask, [], on_text=on_text)
    assert done.usage is not None
    inputs, outputs = done.usage.input_tokens, done.usage.output_tokens
    assert done.cost == pytest.approx(inputs * 1e-6 + outputs * 2e-6)
    assert done.input_cost == pytest.approx(inputs * 1e-6)
    assert not {"input_cost_per_token", "output_cost_per_token"} & set(stub.requests[-1])


def test_prices_given_in_the_options_replace_litellms_for_a_model_it_knows(
        stub: StubServer) -> None:
    ask = [{"role": "user", "content": "hi"}]
    mapped = stub_model(stub).send(ask, [], on_text=None).cost
    ours = LiteLLMModel("openai/gpt-4o-mini", api_base=stub.base_url, api_key="sk-test",
                        options={"input_cost_per_token": 1e-3, "output_cost_per_token": 1e-3})
    done = ours.send(ask, [], on_text=None)
    assert done.usage is not None and mapped is not None
    assert done.cost == pytest.approx(1e-3 * (done.usage.input_tokens + done.usage.output_tokens))
    assert done.cost > 100 * mapped


def test_a_session_adds_up_the_prices_its_model_was_given(stub: StubServer) -> None:
    model = LiteLLMModel("openai/our-finetune", api_base=stub.base_url, api_key="sk-test",
                         options={"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6})
    agent = Agent(model=model, builtin_tools=False, namespace={})
    agent.chat("hello there")
    assert agent.cost > 0 and agent.billing().cost == pytest.approx(agent.cost)


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

