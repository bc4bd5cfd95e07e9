"""Message orders a provider refuses, repaired on the request's copy (`providers/_roles`):
Mistral's models — at its own API or a Mistral family served elsewhere — get the same
assistant line between a tool result and a user message after it; other models, and a list
without such a pair, go as they are. What litellm sends from them is tests/real/'s."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.agent.providers._roles import BRIDGE, bridged, refuses_user_after_tool


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
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    asked: list[dict[str, Any]] = [
        {"role": "system", "content": "s"}, {"role": "user", "content": "plot it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "plotted"},
        {"role": "user", "content": "[nbagent images: figures]"},
        {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c2"}]},
        {"role": "tool", "tool_call_id": "c2", "content": "done"},
        {"role": "user", "content": "and now?"}]
    sent = bridged(asked)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant",
                                         "user", "assistant", "tool", "assistant", "user"]
    assert sent[4] == sent[8] == BRIDGE and sent[4] is not BRIDGE  # the same words each time
    assert [m for m in sent if m != BRIDGE] == asked and len(asked) == 8  # the history's own
    answered = asked[:4] + [{"role": "assistant", "content": "a plot"}]
    assert bridged(answered) is answered  # no pair: the same list
