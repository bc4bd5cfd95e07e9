"""The transcript a summarizer reads (`_render`): every message but the notebook notes,
a tool call as one line with its arguments, a long tool result cut to its head and tail
saying how much was left out, a non-text part named by its type."""

from __future__ import annotations

import json

from nbagent.compaction import notebook_note
from nbagent.engine.compaction._render import RESULT_CHARS, render_transcript


def test_calls_are_one_line_and_long_results_keep_head_and_tail() -> None:
    call = {"id": "call-1", "type": "function",
            "function": {"name": "run_code", "arguments": json.dumps({"code": "df.head()"})}}
    result = "HEAD " + "x" * 5_000 + " TAIL"
    text = render_transcript([
        {"role": "user", "content": "Look at df."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call-1", "content": result},
    ])
    assert text.startswith("[user]\nLook at df.")
    assert '[assistant calls run_code (call-1)] {"code": "df.head()"}' in text
    assert "[tool result call-1]\nHEAD " in text and text.endswith(" TAIL")
    omitted = len(result) - 2 * (RESULT_CHARS // 2)
    assert f"[... {omitted:,} characters omitted ...]" in text


def test_notes_are_left_out_and_other_parts_named_by_their_type() -> None:
    note = notebook_note([], "df: DataFrame (3, 2)")
    assert note is not None
    text = render_transcript([
        note,
        {"role": "user", "content": [{"type": "text", "text": "What is this plot?"},
                                     {"type": "image_url", "image_url": {"url": "data:,"}}]},
    ])
    assert "DataFrame" not in text
    assert text == "[user]\nWhat is this plot?\n[image_url]"
