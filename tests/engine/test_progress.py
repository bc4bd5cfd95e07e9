"""A compaction you can see: progress lines before each level and a cleared line after,
on every path; what left the view on each decision; an undo marked on its decision; a
summarizer that raises anything fails its level cleanly."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from nbagent import CompactionController, History, Settings
from nbagent.events import CompactionUndone, Status
from nbagent.providers import parse_token_limits
from nbagent.testing import ScriptedSummarizer
from tests.helpers import session, tool_round

NOTES = "- notes about sales_df"


def controller(summarize: Any = None, **settings: Any) -> tuple[CompactionController, list[Any]]:
    ctl = CompactionController(summarize=summarize, window="local/test",
                               settings=Settings(max_context_tokens=8_192, **settings))
    seen: list[Any] = []
    ctl.events.subscribe(seen.append)
    return ctl, seen


def statuses(seen: list[Any]) -> list[str]:
    return [e.text for e in seen if isinstance(e, Status)]


def test_a_manual_compaction_names_each_level_and_what_it_touches_then_clears() -> None:
    ctl, seen = controller(ScriptedSummarizer(default=NOTES), snip_batch_tokens=0)
    ctl.compact_now(History(session(12)))
    lines = statuses(seen)
    assert lines[0].startswith("clearing ") and "old tool outputs" in lines[0]
    assert lines[1].startswith("summarizing turns 1–") and "into the session memory…" in lines[1]
    assert "tokens" in lines[1] and lines[-1] == ""  # cleared when done


def test_the_snip_line_counts_the_outputs_it_will_clear() -> None:
    ctl, seen = controller(None, snip_batch_tokens=0, keep_recent_turns=2)
    history = History(session(12))
    decision = ctl.compact_now(history)
    assert statuses(seen)[0].startswith("clearing 10 old tool outputs (~")
    assert "cleared 10 old tool results" in decision.reason


@pytest.mark.parametrize("path", ["auto", "midloop", "overflow"])
def test_every_path_shows_progress_and_clears_it(path: str) -> None:
    ctl, seen = controller(ScriptedSummarizer(default=NOTES))
    history = History(session(12))
    if path == "auto":
        ctl.maybe_compact(history)
    elif path == "midloop":
        ctl.on_tool_result(history)
    else:
        ctl.handle_ptl_error(history, parse_token_limits("prompt is too long: 9000 tokens > 6000 maximum"))
    lines = statuses(seen)
    assert len(lines) >= 2 and all(line.endswith("…") for line in lines[:-1]), lines
    assert lines[-1] == ""
    if path == "overflow":
        assert lines[0].startswith("dropping the oldest rounds")


def test_no_progress_when_nothing_runs() -> None:
    ctl, seen = controller(ScriptedSummarizer())
    ctl.maybe_compact(History(session(2)))
    assert statuses(seen) == []


def test_a_failing_summarizer_shows_the_floor_standing_in() -> None:
    ctl, seen = controller(ScriptedSummarizer(default=RuntimeError("down")),
                           snip_batch_tokens=10**9)
    ctl.maybe_compact(History(session(12)))
    lines = statuses(seen)
    assert any(line.startswith("keeping what code can of turns") for line in lines), lines


def test_each_decision_says_what_left_the_view_and_how_to_get_it_back() -> None:
    ctl, _ = controller(ScriptedSummarizer(default=NOTES), snip_batch_tokens=0)
    decision = ctl.compact_now(History(session(12)))
    assert decision.left_view is not None
    assert decision.left_view.startswith("Left the view: turns 1–")
    assert "folded" in decision.left_view and "tokens" in decision.left_view
    assert "recall" in decision.left_view and "agent.undo_compaction()" in decision.left_view
    assert "%" not in decision.left_view


def test_a_snip_alone_says_how_many_outputs_were_cleared() -> None:
    ctl, _ = controller(None, snip_batch_tokens=0, keep_recent_turns=2)
    decision = ctl.on_tool_result(History(session(12)))
    assert decision.levels == ["L1 snip"]
    assert decision.left_view is not None and "old tool outputs cleared" in decision.left_view
    assert "folded" not in decision.left_view


def test_a_decision_that_changed_nothing_has_no_left_view() -> None:
    ctl, _ = controller(ScriptedSummarizer())
    assert ctl.maybe_compact(History(session(2))).left_view is None


def test_undo_marks_the_decision_undone_and_says_so_on_the_stream() -> None:
    ctl, seen = controller(ScriptedSummarizer(default=NOTES))
    history = History(session(12))
    before = copy.deepcopy(history.messages)
    decision = ctl.compact_now(history)
    assert not decision.undone
    ctl.undo(history)
    assert history.messages == before
    assert ctl.decisions[-1].undone and ctl.decisions[-1].levels == decision.levels
    undone = [e for e in seen if isinstance(e, CompactionUndone)]
    assert len(undone) == 1 and undone[0].decision == ctl.decisions[-1]


class OwnBaseError(BaseException):
    """A BaseException of the summarizer's own (not an interrupt)."""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


@pytest.mark.parametrize("error", [RuntimeError("down"), OwnBaseError("mine"),
                                   asyncio.CancelledError(), Unprintable()],
                         ids=["exception", "own-base-exception", "cancelled", "unprintable"])
def test_a_summarizer_that_raises_anything_fails_its_level_cleanly(error: BaseException) -> None:
    def summarize(messages: list[dict[str, Any]]) -> str:
        raise error

    ctl, seen = controller(summarize, snip_batch_tokens=10**9)
    history = History(session(12))
    decision = ctl.maybe_compact(history)  # does not raise
    assert type(error).__name__ in decision.reason
    assert decision.levels == ["L3 floor"] and decision.failures == 1  # counted
    assert statuses(seen)[-1] == ""


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(2)],
                         ids=["keyboard-interrupt", "system-exit"])
def test_an_interrupt_in_the_summarizer_keeps_its_meaning_and_the_history(
        error: BaseException) -> None:
    def summarize(messages: list[dict[str, Any]]) -> str:
        raise error

    ctl, seen = controller(summarize, snip_batch_tokens=10**9)
    history = History(session(12))
    before = copy.deepcopy(history.messages)
    with pytest.raises(type(error)):
        ctl.maybe_compact(history)
    assert history.messages == before and history.generation == 0
    assert ctl.failure_count() == 0 and statuses(seen)[-1] == ""  # the line is cleared


def test_a_summarizer_cancelled_in_a_merge_merges_by_code() -> None:
    def summarize(messages: list[dict[str, Any]]) -> str:
        if "Merge these memory notes" in str(messages[-1]["content"]):
            raise asyncio.CancelledError()
        return NOTES + " " + "x " * 400

    ctl, _ = controller(summarize, memory_max_tokens=10)
    history = History(session(12))
    for t in range(12, 24):
        ctl.compact_now(history)  # never raises
        history.extend(tool_round(t))
    merged = [d for d in ctl.decisions if "merging failed" in d.reason]
    assert merged and "CancelledError" in merged[0].reason and merged[0].action == "compacted"


def test_a_status_line_only_for_levels_that_act() -> None:
    # a snip below its batch minimum clears nothing: no "clearing … old tool outputs" line
    ctl, seen = controller(ScriptedSummarizer(default=NOTES), snip_batch_tokens=10**9)
    decision = ctl.compact_now(History(session(12)))
    lines = statuses(seen)
    assert "L1 snip" not in decision.levels and decision.levels == ["L2 memory"]
    assert not any(line.startswith("clearing") for line in lines), lines
    assert lines[0].startswith("summarizing turns 1–") and lines[-1] == ""


def test_no_line_says_it_clears_nothing() -> None:
    ctl, seen = controller(None, keep_recent_turns=100)  # no tool output is old enough
    ctl.compact_now(History(session(12)))
    lines = statuses(seen)
    assert lines and not any("clearing 0" in line or "(~0 tokens)" in line for line in lines)
