"""Where the blocks nbagent writes go: the pins, the notebook state and notebook notes.

Pins are one system message right after the system prompt, so they are part of the
preamble that every level leaves alone. The notebook state is one user-role block at
the end of the compaction blocks (after the preamble, memory and summary), where it
never separates a tool call from its result and moves only when it is replaced.
A notebook note is appended to the conversation when the kernel's variables changed
since the latest one, so what was sent is never edited; L1 clears superseded ones.
All are pure: a new list or message comes back, the input is not touched.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._markers import (
    NOTE_HEADER,
    PINS_HEADER,
    STATE_HEADER,
    is_note,
    is_notebook_state,
    is_pins,
)
from ._common import Layout, Message


def _indented(text: str) -> str:
    return "- " + text.strip().replace("\n", "\n  ")


def with_pins(messages: Sequence[Message], pins: Sequence[str]) -> list[Message]:
    """`messages` with one pins block holding `pins` verbatim (in order), in place of any
    earlier one; no pins removes the block. It sits right after the leading system
    messages, so every compaction level keeps it as part of the preamble."""
    result = [m for m in messages if not is_pins(m)]
    kept = [p for p in pins if p.strip()]
    if not kept:
        return result
    block = {"role": "system",
             "content": PINS_HEADER + "".join(f"\n{_indented(p)}" for p in kept)}
    at = 0
    while at < len(result) and result[at].get("role") == "system":
        at += 1
    return [*result[:at], block, *result[at:]]


def pins_of(messages: Sequence[Message]) -> list[str]:
    """The pinned texts, as `with_pins` was given them (stripped)."""
    block = next((m for m in messages if is_pins(m)), None)
    if block is None:
        return []
    pins: list[str] = []
    for line in str(block["content"])[len(PINS_HEADER):].split("\n"):
        if line.startswith("- "):
            pins.append(line[2:])
        elif line.startswith("  ") and pins:
            pins[-1] += "\n" + line[2:]
    return pins


def with_notebook_state(messages: Sequence[Message], text: str | None) -> list[Message]:
    """`messages` with one notebook-state block holding `text`, replacing any earlier one
    wherever it was; None (or blank) removes it.

    The block goes at the end of the compaction blocks: after the system prompt, the pins
    and any memory or summary, before the first round kept verbatim.
    """
    result = [m for m in messages if not is_notebook_state(m)]
    if text is None or not text.strip():
        return result
    block = {"role": "user", "content": f"{STATE_HEADER}\n{text.strip()}"}
    at = Layout.of(result).blocks_end
    return [*result[:at], block, *result[at:]]


def notebook_state_of(messages: Sequence[Message]) -> str | None:
    """The text of the notebook-state block, or None when there is none."""
    block = next((m for m in messages if is_notebook_state(m)), None)
    return None if block is None else str(block["content"])[len(STATE_HEADER):].strip()


def notebook_note(messages: Sequence[Message], text: str | None) -> Message | None:
    """The note to append to `messages` for the kernel's state `text`: None when it is
    blank or the same as the latest note they hold (a cleared one holds none)."""
    if text is None or not text.strip():
        return None
    note = {"role": "user", "content": f"{NOTE_HEADER}\n{text.strip()}"}
    latest = next((m for m in reversed(messages) if is_note(m)), None)
    if latest is not None and latest.get("content") == note["content"]:
        return None
    return note
