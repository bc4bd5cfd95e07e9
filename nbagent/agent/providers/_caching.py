"""Prompt caching, per provider family: which requests carry cache breakpoints, where they
go, and which get a per-session cache key (and, for every family whose route does not join
them itself, user messages in a row sent as one): the `FAMILIES` table. Pure functions
on OpenAI-format messages; litellm turns a message's `cache_control` into the provider's
own marker.

    marked     Anthropic direct, Bedrock's and Vertex's Claude models: only what a request
               marks is cached. Up to four breakpoints: the latest stable message, the
               newest earlier breakpoint still intact (so the provider's ~20-block
               look-back never misses it, and after a compaction the request reads up to
               the previous boundary), the compaction boundary (how far compaction has
               rewritten: the next one starts after it), the end of the system prompt
               (tools and system come first in the cached prefix). A breakpoint whose
               prefix is under the model's minimum cacheable size is silently not cached,
               so none is spent there.
    keyed      OpenAI's own models: cached automatically; a stable `prompt_cache_key` per
               chat session routes the session's requests to the same cache.
    automatic  DeepSeek and the rest: cached automatically on a stable prefix; nothing sent.
    none       Gemini (a marker starts a cached-content lookup on every request) and local
               servers: nothing sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Message = dict[str, Any]
CacheFamily = Literal["marked", "keyed", "automatic", "none"]

MAX_BREAKPOINTS = 4
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
_MINIMUM_TOKENS = (  # Anthropic's minimum cacheable prompt, longest match first
    ("haiku-4", 4_096), ("opus-4-5", 4_096), ("opus-4.5", 4_096),
    ("haiku", 2_048), ("", 1_024),
)  # fmt: skip
_MARKED = re.compile(
    r"^(?:anthropic/|claude)|^bedrock/.*(?:anthropic|claude)|^vertex_ai/.*(?:claude|anthropic)",
    re.I,
)
_NEVER = re.compile(r"^(?:gemini/|vertex_ai/|vertex_ai_beta/|local/|ollama|lm_studio/)|gemini",
                    re.I)
_OPENAI = re.compile(r"^(?:openai/)?(?:gpt-|o\d|chatgpt-)", re.I)


@dataclass(frozen=True)
class CachePlan:
    """What the loop knows about one request that the provider's cache needs.

    `stable`: `messages[:stable]` are the history as stored (and as sent before).
    `prefix_tokens[i]`: tokens through message `i`, tool schemas included. `boundary`: the
    last message compaction has rewritten (its last block, or the last cleared tool result
    or note, short of a live note); the next clearing starts after it. `previous`: the
    newest earlier breakpoint whose prefix is still unchanged (the previous request's
    latest, or after a compaction the previous boundary). `key`: the chat session's
    stable cache key.
    """

    stable: int
    prefix_tokens: Sequence[int] = ()
    boundary: int | None = None
    previous: int | None = None
    key: str | None = None
    enabled: bool = True
    preamble: int = 1  # leading system messages (system prompt, pins)


@dataclass(frozen=True)
class Family:
    """One cache family: which models belong (their litellm `pattern`, or any model of
    `providers`; with `only_via`, the pattern counts only when litellm routes the model
    through that provider) and the same in words (`named`: the `prompt_caching` setting's
    description and the docs name them from it), whether its requests carry breakpoints
    (`marks`) or a per-session key (`keyed`), and whether the route joins user messages in
    a row itself (`route_joins_user_messages`: litellm's Anthropic-format transformations
    do, each message keeping its marker). Every other route gets them joined here, since
    some providers and chat templates refuse two in a row: a family that marks is not a
    route that joins (a Claude model reached in OpenAI format is marked and not joined by
    it)."""

    name: CacheFamily
    pattern: re.Pattern[str]
    named: str
    providers: tuple[str, ...] = ()
    only_via: str | None = None
    marks: bool = False
    keyed: bool = False
    route_joins_user_messages: bool = False

    def holds(self, name: str, provider: str | None) -> bool:
        if self.only_via is not None:
            return provider == self.only_via and bool(self.pattern.search(name))
        return bool(self.pattern.search(name)) or provider in self.providers


# The families, asked in order: the first that holds a model is its family.
FAMILIES: tuple[Family, ...] = (
    Family("marked", _MARKED, named="Anthropic, Bedrock's and Vertex's Claude models",
           marks=True, route_joins_user_messages=True),
    Family("none", _NEVER, named="Gemini, Vertex's other models, the embedded model, Ollama "
           "and LM Studio",
           providers=("gemini", "vertex_ai")),
    Family("keyed", _OPENAI, named="OpenAI", only_via="openai", keyed=True),
    # the rest: a stable prefix, nothing sent
    Family("automatic", re.compile(""), named="DeepSeek and the rest"),
)


def families_named(*, marks: bool = False, keyed: bool = False) -> str:
    """The families whose requests carry breakpoints (`marks`) or a per-session key
    (`keyed`), in words ("OpenAI"): what the `prompt_caching` setting and the docs say."""
    return ", ".join(family.named for family in FAMILIES
                     if (marks and family.marks) or (keyed and family.keyed))


def prompt_caching_words() -> str:
    """The `prompt_caching` setting's description, naming the families from `FAMILIES`."""
    return (f"Mark requests for the provider's prompt cache where it needs marks "
            f"({families_named(marks=True)}) and send a per-session cache key where it "
            f"accepts one ({families_named(keyed=True)}); off sends requests unmarked.")


def family_of(model: str, provider: str | None = None) -> Family:
    """The family row of `model` (a litellm name); `provider` is litellm's, if known."""
    name = model.strip()
    return next(family for family in FAMILIES if family.holds(name, provider))


def cache_family(model: str, provider: str | None = None) -> CacheFamily:
    """How `model` (a litellm name) caches prompts; `provider` is litellm's, if known."""
    return family_of(model, provider).name


def minimum_cacheable(model: str) -> int:
    """The smallest prefix (tokens) Anthropic caches for `model`; shorter ones are not."""
    lowered = model.lower()
    return next(size for part, size in _MINIMUM_TOKENS if part in lowered)


def breakpoints(plan: CachePlan, minimum: int) -> list[int]:
    """The message indices to mark, at most four, in order: each a prefix worth caching."""
    latest = plan.stable - 1
    candidates = [latest, plan.previous, plan.boundary, plan.preamble - 1]
    chosen: list[int] = []
    for index in candidates:
        if index is None or not 0 <= index <= latest or index in chosen:
            continue
        tokens = plan.prefix_tokens[index] if index < len(plan.prefix_tokens) else 0
        if tokens >= minimum and len(chosen) < MAX_BREAKPOINTS:
            chosen.append(index)
    return sorted(chosen)


def joined_user_messages(messages: list[Message]) -> list[Message]:
    """Two or more user messages in a row (the user's, a notebook note, a round's figures)
    as one, their texts a blank line apart: some providers and chat templates refuse two in
    a row. A list content (text and image parts) joins part by part. The same history
    always gives the same bytes, so a cached prefix still matches."""
    joined: list[Message] = []
    for message in messages:
        last = joined[-1] if joined else None
        if (last is not None and last.get("role") == message.get("role") == "user"
                and _joinable(last.get("content")) and _joinable(message.get("content"))):
            joined[-1] = {**last, "content": _joined(last["content"], message["content"])}
        else:
            joined.append(message)
    return joined if len(joined) < len(messages) else messages


def _joinable(content: Any) -> bool:
    return isinstance(content, str) or (
        isinstance(content, list) and all(isinstance(part, dict) for part in content))


def _joined(first: str | list[dict[str, Any]],
            second: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Two contents as one: texts a blank line apart; where either holds parts, the parts
    in order, the text parts that meet merged (a blank line apart, as two strings)."""
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    head = [{"type": "text", "text": first}] if isinstance(first, str) else list(first)
    tail = [{"type": "text", "text": second}] if isinstance(second, str) else list(second)
    if head and tail and head[-1].get("type") == tail[0].get("type") == "text":
        meeting = {**head[-1], "text": f"{head[-1].get('text', '')}\n\n{tail[0].get('text', '')}"}
        return [*head[:-1], meeting, *tail[1:]]
    return [*head, *tail]


def apply_cache_plan(model: str, provider: str | None, messages: list[Message],
                     plan: CachePlan | None) -> tuple[list[Message], dict[str, Any]]:
    """The messages to send (copies where marked or joined) and the extra request
    options. Consecutive user messages are joined unless the family's route joins them
    itself (its own flag, not its marks: see `Family`)."""
    family = family_of(model, provider)
    if not family.route_joins_user_messages:
        messages = joined_user_messages(messages)
    if plan is None or not plan.enabled:
        return messages, {}
    if family.keyed:
        return messages, ({"prompt_cache_key": plan.key} if plan.key else {})
    if not family.marks:
        return messages, {}
    marks = breakpoints(plan, minimum_cacheable(model))
    if not marks:
        return messages, {}
    marker = {"cache_control": dict(EPHEMERAL)}
    return [{**m, **marker} if i in marks else m for i, m in enumerate(messages)], {}
