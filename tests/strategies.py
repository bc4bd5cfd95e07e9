"""Hypothesis strategies for valid OpenAI-format histories."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from nbagent.engine import IMAGES_HEADER, NOTE_HEADER

# Every character UTF-8 can encode: all but the surrogates. Said by category alone, not
# also with codec="utf-8" (the same 1,112,064 characters): hypothesis finds a codec's
# characters by encoding each of them, 1.6 s of CPU in every worker that draws one on a
# clean clone (it keeps the answer in .hypothesis/, which a clean clone lacks).
_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=0, max_size=24)


@st.composite
def rounds(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    """One round: a user message, zero or more tool steps, maybe a final reply; a
    notebook note (the agent's, through litellm) may follow the user message or a step,
    and a step's figures (image parts, for a model that reads images) its tool results."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw(_text) or "?"}]

    def maybe_note() -> None:
        if draw(st.integers(0, 3)) == 0:
            messages.append({"role": "user", "content": f"{NOTE_HEADER}\nx: int = "
                                                        f"{draw(st.integers(0, 9)) * 100}"})

    maybe_note()
    for step in range(draw(st.integers(0, 3))):
        calls = [
            {
                "id": f"call-{index}-{step}-{n}",
                "type": "function",
                "function": {
                    "name": draw(st.sampled_from(["describe", "read_file", "python"])),
                    "arguments": json.dumps({"arg": draw(_text)}),
                },
            }
            for n in range(draw(st.integers(1, 3)))
        ]
        messages.append(
            {"role": "assistant", "content": draw(st.none() | _text), "tool_calls": calls}
        )
        answered = draw(st.permutations(calls))
        for call in answered:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": draw(_text) * draw(st.integers(1, 30)),
                }
            )
        if draw(st.integers(0, 3)) == 0:
            messages.append({"role": "user", "content": [
                {"type": "text", "text": f"{IMAGES_HEADER}\nimage 1: agent run {step}"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo"
                                                           + "A" * draw(st.integers(0, 400))}}]})
        maybe_note()
    if draw(st.booleans()):
        messages.append({"role": "assistant", "content": draw(_text) or "ok"})
    return messages


@st.composite
def histories(draw: st.DrawFn, min_rounds: int = 0, max_rounds: int = 8) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": "You are a careful data assistant."})
    for index in range(draw(st.integers(min_rounds, max_rounds))):
        messages.extend(draw(rounds(index)))
    if messages and draw(st.booleans()):  # a model turn whose tool calls await results
        calls = [
            {
                "id": f"pending-{n}",
                "type": "function",
                "function": {"name": "python", "arguments": "{}"},
            }
            for n in range(2)
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        if draw(st.booleans()):
            messages.append({"role": "tool", "tool_call_id": "pending-1", "content": "partial"})
    return messages
