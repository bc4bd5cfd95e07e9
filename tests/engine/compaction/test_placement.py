"""Where the blocks nbagent writes go: pins one block after the system prompt, the notebook
state one block after the memory, replaced (not appended) wherever it was, never between
a tool call and its result, and kept by the levels."""

from __future__ import annotations

from nbagent import validate_messages
from nbagent.compaction import (
    full_compact,
    notebook_state_of,
    pins_of,
    session_memory_compact,
    with_notebook_state,
    with_pins,
)
from nbagent.engine import (
    PINS_HEADER,
    STATE_HEADER,
    is_memory,
    is_notebook_state,
    is_pins,
    is_plain_user,
)
from tests.engine.compaction.sessions import (
    KNOBS,
    data_session,
)
from tests.helpers import SYSTEM, nine_sections, session


def test_pins_are_one_block_after_the_system_prompt_replaced_not_appended() -> None:
    messages = session(3)
    pinned = with_pins(messages, ["revenue is in EUR", "two\nlines"])
    assert pinned[0] == SYSTEM and is_pins(pinned[1]) and pinned[2:] == messages[1:]
    assert pins_of(pinned) == ["revenue is in EUR", "two\nlines"]
    again = with_pins(pinned, ["only this"])
    assert sum(map(is_pins, again)) == 1 and pins_of(again) == ["only this"]
    assert with_pins(again, []) == messages and messages == session(3)  # input untouched
    assert str(pinned[1]["content"]).startswith(PINS_HEADER)


def test_the_notebook_state_is_one_block_after_the_memory_replaced_wherever_it_was() -> None:
    folded = list(session_memory_compact(data_session(), None, **KNOBS))
    with_state = with_notebook_state(folded, "visits: DataFrame (4100, 9) columns: dose_mg")
    assert is_memory(with_state[1]) and is_notebook_state(with_state[2])
    assert with_state[3:] == folded[2:]
    moved = [*with_state[:2], *with_state[3:5], with_state[2], *with_state[5:]]
    replaced = with_notebook_state(moved, "visits: DataFrame (4000, 9)")
    assert sum(map(is_notebook_state, replaced)) == 1 and is_notebook_state(replaced[2])
    assert notebook_state_of(replaced) == "visits: DataFrame (4000, 9)"
    assert with_notebook_state(replaced, None) == folded
    assert str(with_state[2]["content"]).startswith(STATE_HEADER)


def test_the_notebook_state_never_splits_a_tool_call_from_its_result() -> None:
    pending = session(2)[:3]  # a user ask, a tool call and its result
    placed = with_notebook_state(pending, "x: int")
    validate_messages(placed)
    assert is_notebook_state(placed[1]) and not is_plain_user(placed[1])


def test_compaction_keeps_the_notebook_state_and_puts_it_after_the_memory() -> None:
    messages = with_notebook_state(data_session(), "visits: DataFrame (4100, 9)")
    folded = session_memory_compact(messages, None, **KNOBS)
    assert is_memory(folded[1]) and folded[2] == messages[1]
    summarized = full_compact(messages, lambda _: nine_sections())
    assert summarized[2] == messages[1]
    assert not any("visits: DataFrame" in str(m["content"]) for m in summarized[1:2])
