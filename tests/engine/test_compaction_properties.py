"""For any valid history and any level: a valid history comes out, never larger,
with the system prompt untouched; L1 and L5 are idempotent; the pins and notebook-state
blocks are placed without breaking a history and replaced, never duplicated."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nbagent import Settings, thresholds, validate_messages
from nbagent.compaction import (
    context_collapse,
    ptl_fallback,
    session_memory_compact,
    with_notebook_state,
    with_pins,
)
from nbagent.engine._ladder import LADDER
from nbagent.engine._level_context import LadderContext
from nbagent.engine._markers import is_notebook_state, is_pins
from nbagent.engine.compaction._common import tokens
from tests.helpers import nine_sections
from tests.strategies import histories

Messages = list[dict[str, Any]]


def summary(_: Messages) -> str:
    return nine_sections("brief")


# Every row of the ladder, bound as the controller binds it (small sizes, so short
# histories fold), plus the options no setting reaches and L5, which is on no ladder.
SMALL = Settings(keep_recent_turns=1, snip_min_chars=10, snip_batch_tokens=0,
                 memory_tail_min_tokens=10, memory_tail_max_tokens=200,
                 memory_tail_min_messages=1, memory_min_fold_tokens=0)
CONTEXT = LadderContext(SMALL, thresholds("claude-sonnet-4-5", settings=SMALL), summary,
                        overflow=(500, 100))  # "prompt is too long: 500 tokens > 100 maximum"
LEVELS: dict[str, Callable[[Messages], Messages]] = {
    **{rung.name: rung.bind(CONTEXT) for rung in LADDER},
    "L2-floor": lambda m: session_memory_compact(
        m, None, tail_min_tokens=10, tail_max_tokens=200, tail_min_messages=1,
        floor_tokens_budget=50,
    ),
    "L4-no-limit": lambda m: ptl_fallback(m, None),
    "L5": lambda m: context_collapse(m, max_chars=20),
}


@given(histories(), st.sampled_from(sorted(LEVELS)))
def test_every_level_returns_a_valid_smaller_history(messages: Messages, level: str) -> None:
    original = copy.deepcopy(messages)
    pending = validate_messages(messages)
    result = LEVELS[level](messages)
    assert messages == original  # never mutates its input
    assert validate_messages(result) == pending  # pairing holds, pending calls kept
    assert tokens(result) <= tokens(messages)
    system = [m for m in messages if m["role"] == "system"][:1]
    assert [m for m in result if m["role"] == "system"][:1] == system
    if not result.changed:  # type: ignore[attr-defined]
        assert list(result) == messages and result.reason  # type: ignore[attr-defined]


@given(histories(), st.sampled_from(["L1 snip", "L5"]))
def test_snip_and_collapse_are_idempotent(messages: Messages, level: str) -> None:
    once = list(LEVELS[level](messages))
    assert list(LEVELS[level](once)) == once


@given(histories(), st.text(min_size=1, max_size=40), st.sampled_from(sorted(LEVELS)))
def test_placed_blocks_keep_a_history_valid_and_survive_every_level(
    messages: Messages, text: str, level: str
) -> None:
    pending = validate_messages(messages)
    placed = with_notebook_state(with_pins(messages, [text]), text)
    assert validate_messages(placed) == pending
    assert with_notebook_state(with_pins(placed, []), None) == messages
    again = with_notebook_state(with_pins(placed, [text]), text)
    assert again == placed  # replaced, not appended: the same text gives the same list
    result = LEVELS[level](placed)
    assert validate_messages(result) == pending
    assert [m for m in result if is_pins(m)] == [m for m in placed if is_pins(m)]
    if text.strip():
        assert sum(map(is_notebook_state, result)) == 1
