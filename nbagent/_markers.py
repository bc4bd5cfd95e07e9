"""The fixed texts compaction writes into a history, and how to recognise them.

Every marker is a constant: no timestamps, counters or ids, so a compacted
prefix stays byte-identical from one request to the next and prompt caches hit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SNIP_PLACEHOLDER = "[Old tool result content cleared]"
MEMORY_HEADER = "[nbagent session memory]"
SUMMARY_HEADER = "[nbagent conversation summary]"
COLLAPSE_MARKER = "[... {removed:,} characters removed ...]"


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
