"""L5: truncate large tool results in place (a utility, not part of the automatic chain)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._markers import COLLAPSE_MARKER
from .._tokens import estimate_tokens
from ._common import LevelResult, Message

_COLLAPSED = re.compile(re.escape(COLLAPSE_MARKER).replace(r"\{removed:,\}", r"[\d,]+") + r"$")


def context_collapse(messages: Sequence[Message], max_chars: int = 200) -> LevelResult:
    """Cut every tool result longer than `max_chars` to its head plus a marker
    saying how many characters were removed. Idempotent; never mutates its input.
    """
    result = list(messages)
    collapsed = 0
    for index, message in enumerate(messages):
        content = message.get("content")
        if message["role"] != "tool" or not isinstance(content, str):
            continue
        if len(content) <= max_chars or _COLLAPSED.search(content):
            continue
        marker = COLLAPSE_MARKER.format(removed=len(content) - max_chars)
        cut = f"{content[:max_chars]}\n{marker}"
        if estimate_tokens(cut) >= estimate_tokens(content):
            continue  # the marker would cost more than it saves
        result[index] = {**message, "content": cut}
        collapsed += 1
    if not collapsed:
        return LevelResult.unchanged(messages, f"no tool result over {max_chars:,} characters")
    return LevelResult(result, changed=True, reason=f"collapsed {collapsed} tool results")
