"""What the levels share (`_common`): where a list's preamble, blocks and rounds are (a
note or a block is no round, nor the user's message), where a trailing turn with unanswered tool calls begins,
and which replies are an error or a refusal rather than notes or a summary."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.compaction import extract_floor, notebook_note, with_notebook_state, with_pins
from nbagent.engine import (
    MEMORY_HEADER,
)
from nbagent.engine.compaction._common import Layout, looks_like_error, pending_start
from nbagent.engine.compaction._render import render_transcript
from tests.engine.compaction.sessions import turn
from tests.helpers import SYSTEM, tool_round

Messages = list[dict[str, Any]]


def test_the_layout_finds_the_preamble_the_blocks_and_the_rounds() -> None:
    memory = {"role": "user", "content": f"{MEMORY_HEADER}\n- notes"}
    note = notebook_note([], "x: int")
    assert note is not None
    messages = with_notebook_state(
        with_pins([SYSTEM, memory, *tool_round(0), note, *tool_round(1)], ["in EUR"]), "x: int")
    layout = Layout.of(messages)
    assert (layout.body, layout.blocks_end) == (2, 4)  # system + pins; memory + state
    assert layout.rounds == (4, 9)  # the user's asks, not the note between them


def test_a_pending_turn_starts_at_its_unanswered_call() -> None:
    answered = [SYSTEM, *tool_round(0)]
    assert pending_start(answered) == len(answered)
    pending = answered + tool_round(1)[:3]  # an ask, a call and its result: answered
    assert pending_start(pending) == len(pending)
    unanswered = answered + tool_round(1)[:2]  # the call has no result yet
    assert pending_start(unanswered) == len(unanswered) - 1


@pytest.mark.parametrize(("text", "error"), [
    ("Error: rate limited", True), ("I'm sorry, I can't help with that.", True),
    ("Traceback (most recent call last):", True),
    ("- sales_df loaded; the error in col_3 was fixed", False), ("", False),
])
def test_an_error_or_a_refusal_is_not_notes(text: str, error: bool) -> None:
    assert looks_like_error(text) is error


def test_notes_start_no_round_and_are_not_the_users_messages() -> None:
    history = [{"role": "system", "content": "s"}, *turn(0, "threshold: float = 0.5"),
               *turn(1, None)]
    assert Layout.of(history).rounds == (1, 4)
    floor = extract_floor(history)
    assert floor.user_messages == ("question 0 about sales", "question 1 about sales")
    assert "threshold" not in floor.names
    assert "notebook note" not in render_transcript(history)
