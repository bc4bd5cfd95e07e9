"""The fixed texts compaction writes into a history, and how to recognise them.

Every marker is a constant: no timestamps, counters or ids, so a compacted
prefix stays byte-identical from one request to the next and prompt caches hit.
Blocks nbagent writes: session memory, summary and notebook state (user role, after
the preamble), pins (a system message right after the system prompt). Notebook notes
are user-role messages inside the conversation: what the kernel held when it changed;
a tool round's figures are one too (image parts, for a model that reads images).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SNIP_PREFIX = "[Old tool result content cleared"
SNIP_PLACEHOLDER = SNIP_PREFIX + '; recall(query="{ref}") finds it]'  # names what it replaced
MEMORY_HEADER = "[nbagent session memory; the full transcript is archived: recall finds any detail]"
SUMMARY_HEADER = ("[nbagent conversation summary; the full transcript is archived: recall finds "
                  "any detail]")
STATE_HEADER = ("[nbagent notebook state: the live kernel's variables now; replaced after each "
                "compaction, it outranks older notes]")
NOTE_HEADER = ("[nbagent notebook note: the live kernel's variables at this point of the "
               "conversation; a later note supersedes it]")
NOTE_CLEARED = "[nbagent notebook note: superseded by a later one]"
# the figures a tool round made, for a model that reads images (a user message right after
# the round's tool results: many providers take only text in a tool message)
IMAGES_HEADER = "[nbagent images: figures made by the tool calls above]"
IMAGES_CLEARED = ("[nbagent images: old figures cleared; the tool results above describe "
                  "them]")
PINS_HEADER = "[nbagent pinned facts: the user asked to keep these verbatim]"
COLLAPSE_MARKER = "[... {removed:,} characters removed ...]"
SHORTENED = "[…]"  # ends a user message the floor shortened; recall returns it whole

# Headings of the deterministic floor inside placeholders, memory blocks and summaries.
USER_MESSAGES_HEADING = (f'User messages (verbatim; {SHORTENED} marks a shortened one: '
                         'recall(query="its first words") returns it whole):')
NAMES_HEADING = "Names:"
ERRORS_HEADING = "Error lines:"
RESULTS_HEADING = "Results reported:"
FOCUS_HEADING = "Compacted with the focus:"


def snip_placeholder(tool_call_id: str, digest: str = "") -> str:
    """The short text an old tool result becomes: how to get it back, then a digest of it."""
    head = SNIP_PLACEHOLDER.format(ref=tool_call_id)
    return f"{head}\n{digest}" if digest else head


def is_snipped(content: object) -> bool:
    return isinstance(content, str) and content.startswith(SNIP_PREFIX)


def is_memory(message: Mapping[str, Any]) -> bool:
    return _starts_with(message, MEMORY_HEADER)


def is_summary(message: Mapping[str, Any]) -> bool:
    return _starts_with(message, SUMMARY_HEADER)


def is_notebook_state(message: Mapping[str, Any]) -> bool:
    return _starts_with(message, STATE_HEADER)


def is_note(message: Mapping[str, Any]) -> bool:
    """A notebook note, current or cleared (superseded)."""
    return _starts_with(message, NOTE_HEADER) or _starts_with(message, NOTE_CLEARED)


def is_images(message: Mapping[str, Any]) -> bool:
    """A tool round's figures (image parts after a header text part), or their cleared
    placeholder: nbagent wrote it, the user did not."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list):
        first = content[0] if content else None
        return isinstance(first, Mapping) and first.get("type") == "text" and \
            str(first.get("text", "")).startswith(IMAGES_HEADER)
    return content == IMAGES_CLEARED


def is_cleared(message: Mapping[str, Any]) -> bool:
    """A message compaction has cleared in place: a tool result, a superseded note or a
    round's old figures."""
    content = message.get("content")
    return (message.get("role") == "tool" and is_snipped(content)) or (
        message.get("role") == "user" and content in (NOTE_CLEARED, IMAGES_CLEARED))


def is_pins(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return (message.get("role") == "system" and isinstance(content, str)
            and content.startswith(PINS_HEADER))


def is_block(message: Mapping[str, Any]) -> bool:
    """A block compaction keeps after the preamble: memory, summary or notebook state."""
    return is_memory(message) or is_summary(message) or is_notebook_state(message)


def is_plain_user(message: Mapping[str, Any]) -> bool:
    """A message the user typed: role user, and not a block, note or figures nbagent
    wrote."""
    return message.get("role") == "user" and not is_block(message) and not is_note(message) \
        and not is_images(message)


def _starts_with(message: Mapping[str, Any], header: str) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(header)
