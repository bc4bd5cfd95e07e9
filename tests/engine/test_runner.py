"""Running a ladder, as you can see it: progress lines before each level that acts and a
cleared line after, on every path; the floor standing in for a failing summarizer; a
summarizer that raises anything fails its level cleanly; an undo marked on its decision."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from nbagent import History
from nbagent.events import CompactionUndone
from nbagent.providers import parse_token_limits
from nbagent.testing import ScriptedSummarizer
from tests.helpers import controller, session, statuses, tool_round

NOTES = "- notes about sales_df"


def test_a_manual_compaction_names_each_level_and_what_it_touches_then_clears() -> None:
    ctl, seen = controller(ScriptedSummarizer(default=NOTES), snip_batch_tokens=0)
    ctl.compact_now(History(session(12)))
    lines = statuses(seen)
    assert lines[0].startswith("clearing ") and "old tool outputs" in lines[0]
    assert lines[1].startswith("summarizing turns 1–") and "into the session memory…" in lines[1]
    assert "tokens" in lines[1] and lines[-1] == ""  # cleared when done


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


