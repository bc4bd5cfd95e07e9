"""L1: replace old tool results with one constant placeholder. No model call."""

from __future__ import annotations

from collections.abc import Sequence

from .._markers import is_snipped, snip_placeholder
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

    Each cleared result (longer than `min_chars`) becomes `snip_placeholder(call id)`,
    which tells the model how to recall it;
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
    for index in range(layout.body, keep_from):
        message = messages[index]
        content = message.get("content")
        if message["role"] != "tool" or not isinstance(content, str) or len(content) <= min_chars:
            continue
        if is_snipped(content):
            continue
        cleared = {**message, "content": snip_placeholder(str(message.get("tool_call_id")))}
        result[index] = cleared
        freed += estimate_message_tokens(message) - estimate_message_tokens(cleared)
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
