"""Message orders a provider refuses, repaired on the request's copy (the history keeps
what happened). Mistral's API, and servers that validate with Mistral's own library
(vLLM serving a Mistral model), refuse a user message right after a tool result
("Unexpected role 'user' after role 'tool'"): after a round's figures, a notebook note
between two requests of a turn, or the next question after an interrupted round. There an
assistant line bridges the two; every other provider takes the order as it is.
"""

from __future__ import annotations

import re
from typing import Any

Message = dict[str, Any]

# litellm's providers for Mistral's own API, and the model families it serves (also when
# reached through another route: OpenRouter, a vLLM or NIM server, Ollama's templates)
_PROVIDERS = frozenset({"mistral", "codestral"})
_FAMILIES = re.compile(r"mistral|mixtral|codestral|devstral|magistral|ministral|pixtral",
                       re.IGNORECASE)
# the same words every time: the bridge sits in the cached prefix of the next request
BRIDGE: Message = {"role": "assistant", "content": "(tool results read)"}


def refuses_user_after_tool(model: str, provider: str | None) -> bool:
    """Whether requests to `model` (a litellm name; `provider` litellm's, if known) must
    not put a user message straight after a tool result."""
    return provider in _PROVIDERS or bool(_FAMILIES.search(model))


def bridged(messages: list[Message]) -> list[Message]:
    """`messages` with the bridge between each tool result and a user message after it
    (the same list when there is no such pair)."""
    pairs = [i for i in range(1, len(messages)) if messages[i - 1].get("role") == "tool"
             and messages[i].get("role") == "user"]
    if not pairs:
        return messages
    out: list[Message] = []
    for index, message in enumerate(messages):
        if index in pairs:
            out.append(dict(BRIDGE))
        out.append(message)
    return out
