"""Message orders a provider refuses, repaired on the request's copy (the history keeps
what happened): `RULES`, one row per rule — which models (a predicate of the litellm name
and provider), the repair, why — walked in order by `shaped`, which `LiteLLMModel.send`
calls once, after the cache plan (so a repair keeps content parts and cache marks).

Two user messages in a row are not a row here: the cache plan already sends them as one
on every route that does not join them itself (`_caching.apply_cache_plan`, each family's
`route_joins_user_messages`), which is what the templates that insist roles alternate
(Gemma's, Llama 2's, Mistral's as vLLM, TGI or llama.cpp render them: "Conversation
roles must alternate user/assistant/user/assistant/...") need.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Rule:
    """One request-shape rule: the models it holds for (`applies`, of the litellm name and
    litellm's provider, None when unknown), the `repair` (a new list, or the same one when
    nothing needs repairing; never a change to a message it was given) and `why`."""

    name: str
    applies: Callable[[str, str | None], bool]
    repair: Callable[[list[Message]], list[Message]]
    why: str


# The rules, applied in order to the request's copy.
RULES: tuple[Rule, ...] = (
    Rule("bridge", refuses_user_after_tool, bridged,
         "Mistral's API, and servers that validate with Mistral's own library (vLLM "
         "serving a Mistral model), refuse a user message right after a tool result "
         "(\"Unexpected role 'user' after role 'tool'\"): after a round's figures, a "
         "notebook note between two requests of a turn, or the next question after an "
         "interrupted round. An assistant line goes between the two."),
)


def shaped(messages: list[Message], model: str, provider: str | None) -> list[Message]:
    """`messages` as `model` takes them: every rule of `RULES` that holds for it, in order
    (the same list when none changes anything)."""
    for rule in RULES:
        if rule.applies(model, provider):
            messages = rule.repair(messages)
    return messages
