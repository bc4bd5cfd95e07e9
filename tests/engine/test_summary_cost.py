"""A summarizer call is made only when it is worth its cost: a model that states what a
call costs (`SummaryCost`: a least saving as a share of the window, calls per compaction,
its summary's size) gets no call for a small saving — the deterministic floor stands in,
or nothing runs — and at most its calls per compaction (no retry, no merge call past
them). A summarizer that states nothing (a cloud model's) is called as before."""

from __future__ import annotations

from typing import Any

from nbagent import CompactionController, History, Settings
from nbagent.compaction import session_memory_compact
from nbagent.engine import CostedSummarizer, SummaryCost
from nbagent.events import Status
from nbagent.testing import MEMORY_HEADER, ScriptedSummarizer
from tests.helpers import session, tool_round

WINDOW = 8_192
NOTES = "- notes about sales_df"  # usable: names something from the transcript
SLOW = SummaryCost(min_saving=0.5, max_calls=1, output_tokens=512)  # 4,096 tokens a call
CHEAP = SummaryCost(min_saving=0.05, max_calls=1, output_tokens=512)


def controller(summarize: Any) -> CompactionController:
    return CompactionController(summarize=summarize, window="local/test",
                                settings=Settings(max_context_tokens=WINDOW))


def statuses(ctl: CompactionController) -> list[str]:
    seen: list[str] = []
    ctl.events.subscribe(lambda e: seen.append(e.text) if isinstance(e, Status) and e.text
                         else None)
    return seen


def test_a_saving_under_the_models_bar_makes_no_call_and_the_floor_stands_in() -> None:
    scripted = ScriptedSummarizer(default=NOTES)
    ctl = controller(CostedSummarizer(scripted, SLOW))
    history = History(session(3))  # 4,500 tokens: folding them frees about 2,500 < 4,096
    before = ctl.count(history)
    lines = statuses(ctl)
    decision = ctl.compact_now(history)
    assert scripted.calls == 0 and decision.summary_calls == 0
    assert decision.action == "compacted" and decision.levels[-1] == "L3 floor"
    assert "L2 memory: not worth a summarizer call" in decision.reason
    assert "4,096 (50% of the window)" in decision.reason
    assert decision.tokens_after < before and ctl.failure_count() == 0  # not a failure
    assert history[1]["content"].startswith(MEMORY_HEADER)
    # a status line only for the level that acted: the floor, never a summarizing line
    assert lines and all("summarizing" not in line for line in lines)
    assert any("no model call" in line for line in lines)


def test_the_preview_says_the_same_and_calls_nothing() -> None:
    scripted = ScriptedSummarizer(default=NOTES)
    ctl = controller(CostedSummarizer(scripted, SLOW))
    history = History(session(3))
    seen = ctl.preview(history)
    assert seen.levels[-1] == "L3 floor" and not seen.calls_model and scripted.calls == 0
    assert ctl.compact_now(history).levels == list(seen.levels)


def test_nothing_runs_when_neither_the_call_nor_the_floor_is_worth_it() -> None:
    scripted = ScriptedSummarizer(default=NOTES)
    ctl = controller(CostedSummarizer(scripted, SLOW))
    history = History(session(0) + [{"role": "user", "content": "Hi, I am on sales_df."},
                                     {"role": "assistant", "content": "Hello."}])
    decision = ctl.compact_now(history)
    assert scripted.calls == 0 and not decision.changed and decision.action == "none"
    assert "not worth a summarizer call" in decision.reason


def test_a_big_saving_makes_the_call_once_even_when_its_notes_are_not_usable() -> None:
    scripted = ScriptedSummarizer(["", NOTES])  # the first notes are empty
    ctl = controller(CostedSummarizer(scripted, CHEAP))
    history = History(session(6))
    decision = ctl.compact_now(history)
    assert scripted.calls == 1 and decision.summary_calls == 1  # no retry
    assert decision.levels[-1] == "L2 memory" and decision.changed
    assert "not usable (asked once)" in decision.reason


def test_a_big_saving_makes_the_call() -> None:
    scripted = ScriptedSummarizer(default=NOTES)
    ctl = controller(CostedSummarizer(scripted, CHEAP))
    lines = statuses(ctl)
    decision = ctl.compact_now(History(session(6)))
    assert scripted.calls == 1 and decision.levels[-1] == "L2 memory"
    assert NOTES in str(decision.summary)
    assert any("summarizing" in line for line in lines)


def test_a_summarizer_that_states_no_cost_is_called_as_before() -> None:
    scripted = ScriptedSummarizer(["", NOTES])
    decision = controller(scripted).compact_now(History(session(3)))
    # three rounds free little, yet the call is made, and unusable notes asked again
    assert scripted.calls == 2 and decision.summary_calls == 2
    assert decision.levels[-1] == "L2 memory"


def test_with_one_call_allowed_the_memory_merges_by_code() -> None:
    tail = {"tail_min_tokens": 200, "tail_max_tokens": 600, "tail_min_messages": 1}
    messages = session(4)
    for start in (4, 8):  # two memory blocks, each from a plain summarizer
        messages = list(session_memory_compact(messages, ScriptedSummarizer(default=NOTES),
                                               **tail)) + [
            m for t in range(start, start + 4) for m in tool_round(t)]
    scripted = ScriptedSummarizer(default=NOTES)
    small = {"memory_max_tokens": 1, "floor_tokens_budget": 50}  # the memory must merge
    result = session_memory_compact(messages, scripted, max_calls=1, **small, **tail)
    assert result.changed and scripted.calls == result.summary_calls == 1
    assert "then merged the later memory blocks" in result.reason
    again = ScriptedSummarizer(default=NOTES)  # without the cap: a merge call as well
    assert session_memory_compact(messages, again, **small, **tail).summary_calls == 2
    assert again.calls == 2
