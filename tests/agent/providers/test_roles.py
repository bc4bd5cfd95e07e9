"""Message orders a provider refuses, repaired on the request's copy (`providers/_roles`,
one row of `RULES` each): Mistral's models — at its own API or a Mistral family served
elsewhere — get the same assistant line between a tool result and a user message after it;
other models, and a list without such a pair, go as they are. Two user messages in a row
(which Gemma's templates refuse) reach a server as one turn through the cache plan's join;
the real bodies `LiteLLMModel.send` builds are checked on the OpenAI-format stub here, those
of each provider's own format are tests/real/'s."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from nbagent.agent.models import LiteLLMModel
from nbagent.agent.providers import BRIDGE, RULES, bridged, refuses_user_after_tool, shaped
from tests.openai_stub import StubServer


def tool_round(ask: str, result: str, call_id: str = "c1") -> list[dict[str, Any]]:
    """A user's ask, the model's tool call and its result: the pair a bridge goes after."""
    call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [{"role": "user", "content": ask},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": result}]



@pytest.mark.parametrize(("model", "provider", "refuses"), [
    ("mistral/mistral-large-latest", "mistral", True),
    ("codestral/codestral-latest", "codestral", True),
    ("hosted_vllm/mistralai/Mistral-7B-Instruct-v0.3", None, True),
    ("openrouter/mistralai/devstral-small", "openrouter", True),
    ("ollama_chat/mixtral", None, True),
    ("openai/gpt-4o", "openai", False),
    ("anthropic/claude-sonnet-4-5", "anthropic", False),
    ("hosted_vllm/Qwen/Qwen2.5-7B-Instruct", None, False),
], ids=lambda v: str(v))
def test_mistrals_models_refuse_a_user_message_after_a_tool_result(
        model: str, provider: str | None, refuses: bool) -> None:
    assert refuses_user_after_tool(model, provider) is refuses


def test_the_bridge_goes_between_each_tool_result_and_the_user_message_after_it() -> None:
    asked = [{"role": "system", "content": "s"}, *tool_round("plot it", "plotted"),
             *tool_round("[nbagent images: figures]", "done", "c2"),
             {"role": "user", "content": "and now?"}]
    sent = bridged(asked)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant",
                                         "user", "assistant", "tool", "assistant", "user"]
    assert sent[4] == sent[8] == BRIDGE and sent[4] is not BRIDGE  # the same words each time
    assert [m for m in sent if m != BRIDGE] == asked and len(asked) == 8  # the history's own
    answered = asked[:4] + [{"role": "assistant", "content": "a plot"}]
    assert bridged(answered) is answered  # no pair: the same list


def test_shaped_walks_the_rules_in_order_and_leaves_other_models_alone() -> None:
    assert [rule.name for rule in RULES] == ["bridge"]  # the Mistral bridge comes first
    assert all(rule.why for rule in RULES)
    asked = [*tool_round("plot it", "plotted"), {"role": "user", "content": "and now?"}]
    assert shaped(asked, "mistral/mistral-large-latest", "mistral") == bridged(asked)
    assert shaped(asked, "openai/gpt-4o", "openai") is asked  # no rule holds: the same list


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def sent_for(stub: StubServer, name: str, history: list[dict[str, Any]]) -> list[Any]:
    """The messages of the body `LiteLLMModel.send` really sends for `history`."""
    before = copy.deepcopy(history)
    LiteLLMModel(name, api_base=stub.base_url, api_key="sk-test-not-real").send(
        history, [], on_text=None)
    assert history == before  # the history's own messages are untouched
    messages: list[Any] = stub.requests[-1]["messages"]
    return messages


def test_a_gemma_server_gets_two_user_messages_as_one_turn(stub: StubServer) -> None:
    """Gemma's template on vLLM, TGI or llama.cpp raises "Conversation roles must alternate
    user/assistant/user/assistant/..." on two user messages in a row (a question after a
    turn that ended unanswered); the cache plan's join sends them as one, parts kept."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "unanswered"},
        {"role": "user", "content": [{"type": "text", "text": "this one"}, image]}]
    sent = sent_for(stub, "hosted_vllm/google/gemma-3-27b-it", history)
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["content"] == [{"type": "text", "text": "unanswered\n\nthis one"}, image]


@pytest.mark.parametrize(("name", "bridge"), [
    ("hosted_vllm/mistralai/Mistral-7B-Instruct-v0.3", True),
    ("hosted_vllm/google/gemma-3-27b-it", False),
    ("openai/gpt-4o", False),
], ids=lambda v: str(v))
def test_a_tool_result_then_a_question_is_bridged_only_for_mistral(
        stub: StubServer, name: str, bridge: bool) -> None:
    history = [*tool_round("look", "interrupted"), {"role": "user", "content": "and now?"}]
    roles = [m["role"] for m in sent_for(stub, name, history)]
    assert roles == ["user", "assistant", "tool", *(["assistant"] if bridge else []), "user"]
