"""L1: replace old tool results with a short placeholder: how to recall the result, and a
bounded digest of what it held (paths, table columns, names, error lines); clear the
notebook notes a later one supersedes and old rounds' figures (image parts, so images do
not pile up in the window). No model call.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import _figures as figures
from .._markers import (
    IMAGES_CLEARED,
    NOTE_CLEARED,
    is_images,
    is_note,
    is_snipped,
    snip_placeholder,
)
from .._tokens import estimate_message_tokens
from ._common import Layout, LevelResult, Message, counts_for
from ._floor import digest

DEFAULT_MIN_CHARS = 200
DIGEST_CHARS = 400


def snip_old_tools(
    messages: Sequence[Message],
    *,
    keep_recent_turns: int = 8,
    target_tokens: int | None = None,
    min_chars: int = DEFAULT_MIN_CHARS,
    min_free_tokens: int = 0,
    digest_chars: int = DIGEST_CHARS,
    counts: Sequence[int] | None = None,
) -> LevelResult:
    """Clear tool results older than the newest `keep_recent_turns` rounds.

    Each cleared result (longer than `min_chars`) becomes `snip_placeholder(call id,
    digest)`: how to recall it, and at most `digest_chars` of the names and error lines
    it held. A notebook note as old, which a later note supersedes, becomes
    `NOTE_CLEARED`; an old round's figures become `IMAGES_CLEARED` (each image part
    counts about as much as a long result). Tool calls and assistant text stay, so pairing
    holds. Oldest first;
    with `target_tokens`, stop once the estimate is at or under it. Snipping rewrites cached
    history, so it is done in batches: when it would free fewer than `min_free_tokens`,
    nothing is snipped. `counts` (one per message) saves estimating them again.
    Idempotent; never mutates its input.
    """
    layout = Layout.of(messages)
    if keep_recent_turns <= 0:
        keep_from = len(messages)
    elif keep_recent_turns <= len(layout.rounds):
        keep_from = layout.rounds[-keep_recent_turns]
    else:
        keep_from = layout.body  # fewer rounds than that: none is old enough
    counts = counts_for(messages, counts)
    total = sum(counts)
    if target_tokens is not None and total <= target_tokens:
        return LevelResult.unchanged(
            messages, f"already at or under {figures.tokens(target_tokens)}")
    latest_note = max((i for i, m in enumerate(messages) if is_note(m)), default=-1)
    result = list(messages)
    freed = 0
    snipped = notes = images = 0
    for index in range(layout.body, keep_from):
        message = messages[index]
        content = message.get("content")
        if is_note(message) and index < latest_note and content != NOTE_CLEARED:
            cleared = {**message, "content": NOTE_CLEARED}
        elif is_images(message):
            if content == IMAGES_CLEARED:
                continue
            cleared = {**message, "content": IMAGES_CLEARED}
        elif message["role"] != "tool" or not isinstance(content, str) or \
                len(content) <= min_chars or is_snipped(content):
            continue
        else:
            ref = str(message.get("tool_call_id"))
            cleared = {**message, "content": snip_placeholder(ref, digest(content, digest_chars))}
        saved = counts[index] - estimate_message_tokens(cleared)
        if saved <= 0:
            continue  # the placeholder would cost as much as the result
        result[index] = cleared
        freed += saved
        notes += is_note(message)
        images += is_images(message)
        snipped += message["role"] == "tool"
        if target_tokens is not None and total - freed <= target_tokens:
            break
    if not snipped + notes + images:
        return LevelResult.unchanged(messages, "no old tool result to clear")
    if freed < min_free_tokens:
        return LevelResult.unchanged(
            messages, f"would free only {figures.tokens(freed)} (batch minimum "
            f"{figures.count(min_free_tokens)})"
        )
    superseded = f" and {notes} superseded notebook notes" if notes else ""
    plots = f" and {images} old rounds' figures" if images else ""
    return LevelResult(result, changed=True, reason=f"cleared {snipped} old tool results"
                       f"{superseded}{plots}, ~{figures.tokens(freed)}")
