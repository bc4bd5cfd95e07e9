"""The controller's paths, driven by a scripted summarizer on an 8K window."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nbagent import CompactionController, CompactionStarted, Decision, History, Settings
from nbagent._markers import MEMORY_HEADER, SUMMARY_HEADER, is_snipped
from nbagent.testing import ScriptedSummarizer
from tests.helpers import nine_sections, session, tool_round

MODEL = "local/test"
WINDOW = 8_192  # auto-compact at 6,841; mid-loop at 6,636


def controller(summarize: ScriptedSummarizer, **settings: Any) -> CompactionController:
    return CompactionController(
        summarize=summarize,
        settings=Settings(max_context_tokens=WINDOW, **settings),
        model_info=None,
    )


def over(rounds: int = 12) -> History:
    return History(session(rounds))


def test_under_the_trigger_nothing_runs() -> None:
    summarize = ScriptedSummarizer()
    history = History(session(2))
    decision = controller(summarize).maybe_compact(history, model=MODEL)
    assert (decision.action, decision.changed, summarize.calls) == ("none", False, 0)
    assert decision.tokens_before == decision.tokens_after < decision.threshold == 6_841


def test_over_the_trigger_it_compacts_and_records_the_decision() -> None:
    summarize = ScriptedSummarizer(default="- notes about sales_df")
    history = over()
    ctl = controller(summarize)
    seen: list[Any] = []
    ctl.pre_compact.append(seen.append)
    ctl.post_compact.append(seen.append)
    decision = ctl.maybe_compact(history, model=MODEL)
    assert decision.action == "compacted" and decision.changed
    assert decision.tokens_after < decision.threshold <= decision.tokens_before
    assert decision.tokens_after == ctl.count(history, MODEL)
    assert isinstance(seen[0], CompactionStarted) and seen[1] is decision
    assert decision.levels[-1] == "L2 memory" and decision.summary_calls == 1
    assert history[1]["content"].startswith(MEMORY_HEADER)
    assert list(ctl.decisions) == [decision] and ctl.failure_count() == 0


def test_snip_alone_is_enough_when_it_gets_under_the_trigger() -> None:
    summarize = ScriptedSummarizer()
    history = over(9)
    ctl = controller(summarize, keep_recent_turns=2, snip_batch_tokens=0)
    assert ctl.count(history, MODEL) >= 6_841
    decision = ctl.maybe_compact(history, model=MODEL)
    assert decision.levels == ["L1 snip"] and summarize.calls == 0
    assert any(is_snipped(m["content"]) for m in history)


def test_l3_runs_only_when_l2_could_not() -> None:
    summarize = ScriptedSummarizer([nine_sections()])
    big = "x1.5 " * 3_000
    history = History(session(1) + tool_round(1, result=big)[1:])  # one long round: nothing to fold
    decision = controller(summarize).maybe_compact(history, model=MODEL)
    assert decision.levels == ["L3 summary"], decision.reason
    assert "L2 memory: fewer than two rounds" in decision.reason
    assert history[1]["content"].startswith(SUMMARY_HEADER)


def test_a_failing_summarizer_leaves_the_history_byte_for_byte() -> None:
    history = over()
    before = copy.deepcopy(history.messages)
    summarize = ScriptedSummarizer(default=RuntimeError("provider down"))
    decision = controller(summarize, snip_batch_tokens=10**9).maybe_compact(history, model=MODEL)
    assert decision.action == "failed" and "provider down" in decision.reason
    assert history.messages == before and history.generation == 0


def test_the_breaker_opens_after_exactly_three_failures_and_makes_no_fourth_attempt() -> None:
    history = over()
    summarize = ScriptedSummarizer(default=RuntimeError("provider down"))
    ctl = controller(summarize, snip_batch_tokens=10**9)
    for expected in (1, 2, 3):
        assert ctl.maybe_compact(history, model=MODEL).failures == expected
    assert ctl.breaker_open and summarize.calls == 3  # (transient errors retry in the llm seam)
    fourth = ctl.maybe_compact(history, model=MODEL)
    assert fourth.action == "skipped" and "breaker open" in fourth.reason
    assert ctl.on_tool_result(history, model=MODEL).action == "skipped"  # one shared breaker
    assert summarize.calls == 3
    assert not ctl.state(history, MODEL).auto_compact_armed


def test_a_manual_compact_runs_with_the_breaker_open_and_its_success_closes_it() -> None:
    history = over()
    summarize = ScriptedSummarizer([RuntimeError("down")] * 3, default="- recovered notes")
    ctl = controller(summarize, snip_batch_tokens=10**9)
    for _ in range(3):
        ctl.maybe_compact(history, model=MODEL)
    assert ctl.breaker_open
    decision = ctl.compact_now(history, model=MODEL)
    assert decision.action == "compacted" and not ctl.breaker_open and ctl.failure_count() == 0


def test_reset_failures_closes_the_breaker() -> None:
    ctl = controller(ScriptedSummarizer(default=RuntimeError("down")), snip_batch_tokens=10**9)
    history = over()
    for _ in range(3):
        ctl.maybe_compact(history, model=MODEL)
    ctl.reset_failures()
    assert ctl.failure_count() == 0 and not ctl.breaker_open


def test_a_compaction_still_over_the_trigger_counts_as_a_failure() -> None:
    history = over()
    bloated = "- " + "very long notes " * 3_000
    decision = controller(ScriptedSummarizer(default=bloated)).maybe_compact(history, model=MODEL)
    assert decision.action == "failed" and decision.failures == 1


def test_focus_from_compact_now_reaches_the_summarizer() -> None:
    summarize = ScriptedSummarizer(default="- notes")
    history = History(session(5))
    decision = controller(summarize).compact_now(
        history, model=MODEL, focus="keep the exact column names"
    )
    assert decision.action == "compacted" and decision.focus == "keep the exact column names"
    assert "keep the exact column names" in summarize.last_prompt()


def test_mid_loop_snip_fires_over_the_midloop_trigger_and_spares_the_pending_round() -> None:
    summarize = ScriptedSummarizer()
    history = over()
    ctl = controller(summarize, keep_recent_turns=1)
    decision = ctl.on_tool_result(history, model=MODEL)
    assert (
        decision.action == "compacted" and decision.levels == ["L1 snip"] and summarize.calls == 0
    )
    assert decision.tokens_after <= 0.5 * 6_841 + 800
    assert not is_snipped(history[-2]["content"])  # the newest round's result stays


def test_mid_loop_below_the_trigger_does_nothing() -> None:
    decision = controller(ScriptedSummarizer()).on_tool_result(History(session(2)), model=MODEL)
    assert decision.action == "none" and decision.threshold == 6_636


def test_mid_loop_full_compaction_is_opt_in() -> None:
    summarize = ScriptedSummarizer(default="- notes")
    history = over()
    decision = controller(summarize, midloop_full_compact=True).on_tool_result(history, model=MODEL)
    assert decision.trigger == "midloop" and "L2 memory" in decision.levels


def test_an_overflow_error_runs_l4() -> None:
    history = over()
    size = controller(ScriptedSummarizer()).count(history, MODEL)
    ctl = controller(ScriptedSummarizer())
    decision = ctl.handle_ptl_error(
        history, f"prompt is too long: {size} tokens > {size // 2} maximum", model=MODEL
    )
    assert decision.trigger == "overflow" and decision.levels == ["L4 overflow"]
    assert decision.tokens_after <= 0.9 * size // 2


def test_an_overflow_with_nothing_to_drop_is_a_failure() -> None:
    history = History(session(1))
    decision = controller(ScriptedSummarizer()).handle_ptl_error(history, "too long", model=MODEL)
    assert decision.action == "failed" and decision.failures == 1


def test_disabled_compaction_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_DISABLE_COMPACT", "1")
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", str(WINDOW))
    ctl = CompactionController(summarize=ScriptedSummarizer(), model_info=None)
    decision = ctl.maybe_compact(over(), model=MODEL)
    assert decision.action == "none" and "off" in decision.reason


def test_same_input_same_output() -> None:
    outputs = []
    for _ in range(2):
        history = over()
        controller(ScriptedSummarizer(default="- notes")).maybe_compact(history, model=MODEL)
        outputs.append(history.messages)
    assert outputs[0] == outputs[1]


def test_decisions_are_pydantic_records() -> None:
    decision = controller(ScriptedSummarizer()).maybe_compact(History(session(1)), model=MODEL)
    assert isinstance(decision, Decision)
    assert Decision.model_validate_json(decision.model_dump_json()) == decision


def test_a_weak_summarizer_keeps_the_session_alive_then_opens_the_breaker() -> None:
    """retry → deterministic floor → breaker: what a 135M model needs."""
    summarize = ScriptedSummarizer(default="I think the data is nice.")  # never nine sections
    ctl = controller(summarize)
    big = "x1.5 " * 3_000
    for attempt in (1, 2, 3):
        history = History(session(1) + tool_round(1, result=big)[1:])
        decision = ctl.maybe_compact(history, model=MODEL)
        assert decision.action == "compacted" and decision.levels == ["L3 summary"]
        assert decision.tokens_after < decision.threshold and decision.failures == attempt
        assert "deterministic floor" in decision.reason
    assert ctl.breaker_open and summarize.calls == 6
    assert ctl.maybe_compact(History(session(1) + tool_round(1, result=big)[1:]),
                             model=MODEL).action == "skipped"
