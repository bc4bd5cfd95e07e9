"""For any valid history and any level: a valid history comes out, never larger,
with the system prompt untouched; L1 and L5 are idempotent; the pins and notebook-state
blocks are placed without breaking a history and replaced, never duplicated; a rung that
does nothing, inserted anywhere in the ladder with any flags, changes no decision."""

from __future__ import annotations

import copy
from collections.abc import Callable
from itertools import product
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent import CompactionController, History, Settings, thresholds, validate_messages
from nbagent.compaction import (
    LADDER,
    LevelResult,
    Rung,
    context_collapse,
    ptl_fallback,
    session_memory_compact,
    with_notebook_state,
    with_pins,
)
from nbagent.engine import LadderContext, is_notebook_state, is_pins
from nbagent.events import Status
from tests.helpers import nine_sections, tokens
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


def _nothing(messages: Messages, *, counts: Any = None) -> LevelResult:
    return LevelResult.unchanged(messages, "nothing to do")


def _outcome(ladder: Any, counted: History, size: int, trigger: str, fill: float,
             failing: bool, failures: int) -> tuple[dict[str, Any], list[str], Messages]:
    """The decision (its reason without the do-nothing rung's own clause), the status lines
    and the history after one controller call on a fresh controller, on a fresh copy of
    `counted` (its messages and their counts: `size` tokens), whose trigger the history
    passes by the factor `fill` (so the ladders run and stop at every point)."""
    def summarize(prompt: Messages) -> str:
        if failing:
            raise RuntimeError("the summarizer is down")
        return nine_sections("brief")

    settings = Settings(max_context_tokens=max(64, round(size / 0.835 / fill)),
                        keep_recent_turns=1, snip_min_chars=10, snip_batch_tokens=0,
                        memory_tail_min_tokens=10, memory_tail_max_tokens=200,
                        memory_tail_min_messages=1)
    ctl = CompactionController(summarize=summarize, window="local/test", settings=settings,
                               ladder=ladder)
    ctl.restore_failures(failures)
    lines: list[str] = []
    ctl.events.subscribe(lambda e: lines.append(e.text) if isinstance(e, Status) else None)
    history = counted.copy_with(counted.messages)  # the counts reused, not re-estimated
    if trigger == "auto":
        decision = ctl.maybe_compact(history)
    elif trigger == "midloop":
        decision = ctl.on_tool_result(history)
    elif trigger == "overflow":
        decision = ctl.handle_ptl_error(history, (max(2, size), max(1, size // 2)))
    else:
        decision = ctl.compact_now(history)
    record = decision.model_dump(exclude={"duration_s", "reason"})
    record["reason"] = "; ".join(part for part in decision.reason.split("; ")
                                 if not part.startswith("L9 nothing:"))
    return record, lines, history.messages


@pytest.mark.parametrize(
    ("trigger", "failing", "failures"),
    [("auto", False, 0), ("auto", True, 0), ("auto", False, 3), ("manual", True, 0),
     ("midloop", False, 0), ("overflow", False, 0)],
    ids=["auto", "auto-summarizer-fails", "auto-breaker-open", "manual-summarizer-fails",
         "midloop", "overflow"])
@settings(max_examples=15)
@given(histories(min_rounds=2), st.floats(0.9, 3.0), st.booleans())
def test_a_rung_that_does_nothing_changes_no_decision(
    trigger: str, failing: bool, failures: int, messages: Messages, fill: float,
    fallback: bool,
) -> None:
    # The stop rule, the fallback rule and the stand-in are each rung's own: none of
    # them may depend on where a rung sits or on what an idle rung before it did. The
    # idle rung is on every ladder, at every place, with each `runs` and stop rule.
    # Counted once for the 43 runs below (re-counting was a fifth of each run's CPU); no
    # run may change the messages it was given, which the last line checks.
    original, counted = copy.deepcopy(messages), History(messages)
    size = CompactionController(window="local/test").count(counted)
    expected = _outcome(LADDER, counted, size, trigger, fill, failing, failures)
    for at, runs, needed_over in product(range(len(LADDER) + 1),
                                         ("always", "with_model", "without_model"),
                                         ("trigger", "target")):
        idle = Rung("L9 nothing", _nothing, lambda c: {}, "does nothing",
                    lambda m, n, c: None, ladders=("full", "micro", "overflow"),
                    runs=runs, fallback=fallback, needed_over=needed_over)  # type: ignore[arg-type]
        with_idle = [*LADDER[:at], idle, *LADDER[at:]]
        assert _outcome(with_idle, counted, size, trigger, fill, failing, failures) == \
            expected, (at, runs, needed_over)
    assert messages == original
