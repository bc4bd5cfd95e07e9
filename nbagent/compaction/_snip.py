"""L1: replace old tool results with one constant placeholder. No model call."""

from __future__ import annotations

from collections.abc import Sequence

from .._markers import SNIP_PLACEHOLDER
from .._tokens import estimate_message_tokens
from ._common import Layout, LevelResult, Message, tokens

DEFAULT_MIN_CHARS = 200


def snip_old_tools(
    messages: Sequence[Message],
    *,
    keep_recent_turns: int = 10,
    target_tokens: int | None = None,
    min_chars: int = DEFAULT_MIN_CHARS,
    min_free_tokens: int = 0,
) -> LevelResult:
    """Clear tool results older than the newest `keep_recent_turns` rounds.

    Each cleared result (longer than `min_chars`) becomes `SNIP_PLACEHOLDER`;
    tool calls and assistant text stay, so pairing holds. Oldest first; with
    `target_tokens`, stop once the estimate is at or under it. Snipping rewrites
    cached history, so it is done in batches: when it would free fewer than
    `min_free_tokens`, nothing is snipped. Idempotent; never mutates its input.
    """
    layout = Layout.of(messages)
    if keep_recent_turns <= 0:
        keep_from = len(messages)
    elif keep_recent_turns <= len(layout.rounds):
        keep_from = layout.rounds[-keep_recent_turns]
    else:
        keep_from = layout.body  # fewer rounds than that: none is old enough
    total = tokens(messages)
    if target_tokens is not None and total <= target_tokens:
        return LevelResult.unchanged(messages, f"already at or under {target_tokens:,} tokens")
    result = list(messages)
    freed = 0
    snipped = 0
    placeholder_cost = estimate_message_tokens({"role": "tool", "content": SNIP_PLACEHOLDER})
    for index in range(layout.body, keep_from):
        message = messages[index]
        content = message.get("content")
        if message["role"] != "tool" or not isinstance(content, str) or len(content) <= min_chars:
            continue
        if content == SNIP_PLACEHOLDER:
            continue
        result[index] = {**message, "content": SNIP_PLACEHOLDER}
        freed += estimate_message_tokens(message) - placeholder_cost
        snipped += 1
        if target_tokens is not None and total - freed <= target_tokens:
            break
    if not snipped:
        return LevelResult.unchanged(messages, "no old tool result to clear")
    if freed < min_free_tokens:
        return LevelResult.unchanged(
            messages, f"would free only {freed:,} tokens (batch minimum {min_free_tokens:,})"
        )
    return LevelResult(
        result, changed=True, reason=f"cleared {snipped} old tool results, ~{freed:,} tokens"
    )
