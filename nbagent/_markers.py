"""The fixed texts compaction writes into a history, and how to recognise them.

Every marker is a constant: no timestamps, counters or ids, so a compacted
prefix stays byte-identical from one request to the next and prompt caches hit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SNIP_PREFIX = "[Old tool result content cleared"
SNIP_PLACEHOLDER = SNIP_PREFIX + '; recall(query="{ref}") finds it]'  # names what it replaced
MEMORY_HEADER = "[nbagent session memory; the full transcript is archived: recall finds any detail]"
SUMMARY_HEADER = ("[nbagent conversation summary; the full transcript is archived: recall finds "
                  "any detail]")
COLLAPSE_MARKER = "[... {removed:,} characters removed ...]"


def snip_placeholder(tool_call_id: str) -> str:
    """The short text an old tool result becomes: it says how to get the result back."""
    return SNIP_PLACEHOLDER.format(ref=tool_call_id)


def is_snipped(content: object) -> bool:
    return isinstance(content, str) and content.startswith(SNIP_PREFIX)


def is_memory(message: Mapping[str, Any]) -> bool:
    return _starts_with(message, MEMORY_HEADER)


def is_summary(message: Mapping[str, Any]) -> bool:
    return _starts_with(message, SUMMARY_HEADER)


def is_plain_user(message: Mapping[str, Any]) -> bool:
    """A message the user typed: role user, and not a memory or summary nbagent wrote."""
    return (
        message.get("role") == "user"
        and not _starts_with(message, MEMORY_HEADER)
        and not _starts_with(message, SUMMARY_HEADER)
    )


def _starts_with(message: Mapping[str, Any], header: str) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(header)
