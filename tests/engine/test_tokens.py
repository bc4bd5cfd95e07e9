"""Counting what is sent: a message's content, tool-call arguments and images with framing,
tool schemas, with the estimator or any text counter (a model's own tokenizer)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import estimate_message_tokens, estimate_tokens
from nbagent.engine import IMAGE_TOKENS, MESSAGE_OVERHEAD, count_message_tokens, count_tools_tokens

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import corpora  # noqa: E402


@pytest.fixture(scope="module")
def o200k() -> Any:
    return corpora.o200k()


def test_message_estimate_counts_tool_call_arguments_and_images() -> None:
    call = {
        "id": "a",
        "type": "function",
        "function": {"name": "describe", "arguments": '{"name": "sales_df"}'},
    }
    bare = estimate_message_tokens({"role": "assistant", "content": "ok"})
    with_call = estimate_message_tokens(
        {"role": "assistant", "content": "ok", "tool_calls": [call]}
    )
    assert with_call > bare + estimate_tokens('{"name": "sales_df"}')
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 50_000}}
    assert estimate_message_tokens({"role": "user", "content": [image]}) < IMAGE_TOKENS + 10


def test_messages_and_tools_can_be_counted_with_any_text_counter() -> None:
    seen: list[str] = []

    def count_words(text: str) -> int:
        seen.append(text)
        return len(text.split())

    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "three short words"}],
        "tool_calls": [{"id": "c", "function": {"name": "describe", "arguments": "{}"}}],
    }
    counted = count_message_tokens(message, count_words)
    assert "three short words" in seen and "describe" in seen and "{}" in seen
    assert counted > MESSAGE_OVERHEAD + 3
    tools = [{"type": "function", "function": {"name": "describe"}}]
    assert count_tools_tokens(tools, count_words) < count_tools_tokens(tools)


def test_an_openai_models_messages_are_counted_with_its_own_tokenizer(o200k: Any) -> None:
    from nbagent.agent.models import counter_for

    counter = counter_for("gpt-4o")
    assert counter is not None
    message = {"role": "user", "content": "Describe the revenue column of sales_df, please."}
    content = len(o200k.encode(message["content"]))
    assert content < count_message_tokens(message, counter) < content + 10
