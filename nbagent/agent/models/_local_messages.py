"""Messages as llama.cpp's chat templates can render them, and the count of tool rounds
in the current turn (how the embedded model decides when to stop calling tools)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...engine._markers import is_plain_user

Message = dict[str, Any]


def adapt_messages(messages: list[Message]) -> list[Message]:
    """What llama.cpp's chat templates can render: a string `content` on every assistant
    message, and no `tool` messages (a GGUF's ChatML template knows only system, user and
    assistant), so a tool result is sent as a user message naming the tool it came from."""
    names = {call["id"]: call["function"]["name"] for m in messages if m["role"] == "assistant"
             for call in m.get("tool_calls") or ()}
    adapted = []
    for message in messages:
        if message["role"] == "tool":
            name = names.get(message.get("tool_call_id"), "the tool")
            adapted.append({"role": "user", "content": f"Result of {name}:\n{message['content']}"})
        elif message["role"] == "assistant" and message.get("content") is None:
            adapted.append({**message, "content": ""})
        else:
            adapted.append(message)
    return adapted


def tool_rounds_this_turn(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many rounds of tool calls the model made since the user's last message."""
    rounds = 0
    for message in reversed(messages):
        if is_plain_user(message):
            break
        if message["role"] == "assistant" and message.get("tool_calls"):
            rounds += 1
    return rounds
