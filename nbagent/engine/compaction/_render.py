"""Render messages as a compact transcript for a summarizer: every message kept but the
notebook notes, tool calls as one line each, long tool results cut to head and tail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._markers import is_note

RESULT_CHARS = 600  # head + tail kept of each tool result in a summarizer's input


def content_text(content: Any) -> str:
    """A message's content as the transcript reads it: text parts joined, any other part
    named by its type (`[image_url]`); shared with the floor, which reads the same text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        parts.append(
            str(part.get("text", "")) if part.get("type") == "text" else f"[{part.get('type')}]"
        )
    return "\n".join(parts)


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters omitted ...]\n{text[-half:]}"


def render_message(message: Mapping[str, Any], result_chars: int = RESULT_CHARS) -> str:
    role = message["role"]
    text = content_text(message.get("content"))
    if role == "tool":
        return f"[tool result {message.get('tool_call_id')}]\n{shorten(text, result_chars)}"
    lines = [f"[{role}]\n{text}"] if text else []
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        arguments = shorten(str(function.get("arguments", "")), 300)
        lines.append(f"[{role} calls {function.get('name')} ({call.get('id')})] {arguments}")
    return "\n".join(lines)


def render_transcript(
    messages: Sequence[Mapping[str, Any]], result_chars: int = RESULT_CHARS
) -> str:
    """Every message but the notebook notes (the kernel's state then; the live one comes
    with the next request)."""
    return "\n\n".join(render_message(m, result_chars) for m in messages if not is_note(m))
