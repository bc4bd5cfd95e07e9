"""L5: truncate large tool results in place (a utility, not part of the automatic chain)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._markers import COLLAPSE_MARKER
from .._tokens import estimate_message_tokens
from ._common import LevelResult, Message, counts_for

_COLLAPSED = re.compile(re.escape(COLLAPSE_MARKER).replace(r"\{removed:,\}", r"[\d,]+") + r"$")


def context_collapse(
    messages: Sequence[Message], max_chars: int = 200, *, counts: Sequence[int] | None = None
) -> LevelResult:
    """Cut every tool result longer than `max_chars` to its head plus a marker
    saying how many characters were removed. `counts` (one per message) are reused.
    Idempotent; never mutates its input.
    """
    counts = counts_for(messages, counts)
    result = list(messages)
    collapsed = 0
    for index, message in enumerate(messages):
        content = message.get("content")
        if message["role"] != "tool" or not isinstance(content, str):
            continue
        if len(content) <= max_chars or _COLLAPSED.search(content[-80:]):
            continue
        marker = COLLAPSE_MARKER.format(removed=len(content) - max_chars)
        cut = {**message, "content": f"{content[:max_chars]}\n{marker}"}
        if estimate_message_tokens(cut) >= counts[index]:
            continue  # the marker would cost more than it saves
        result[index] = cut
        collapsed += 1
    if not collapsed:
        return LevelResult.unchanged(messages, f"no tool result over {max_chars:,} characters")
    return LevelResult(result, changed=True, reason=f"collapsed {collapsed} tool results")
