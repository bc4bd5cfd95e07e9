"""The controller's paths, driven by a scripted summarizer on an 8K window."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nbagent import CompactionController, Decision, History, Settings, WindowInfo
from nbagent.compaction import SummaryReply
from nbagent.events import Compacted, CompactionStarted, Rewriting, Status
from nbagent.providers import parse_token_limits
from nbagent.testing import (
    MEMORY_HEADER,
    STATE_HEADER,
    SUMMARY_HEADER,
    ScriptedSummarizer,
    Standalone,
    is_snipped,
)
from tests.helpers import nine_sections, session, tool_round

MODEL = "local/test"
WINDOW = 8_192  # auto-compact at 6,841; mid-loop at 6,636
NOTES = "- notes about sales_df"  # usable notes name something from the transcript


def controller(summarize: ScriptedSummarizer | None, **settings: Any) -> CompactionController:
    return CompactionController(
        summarize=summarize, window=MODEL, settings=Settings(max_context_tokens=WINDOW, **settings)
    )


def over(rounds: int = 12) -> History:
    return History(session(rounds))


def one_long_round() -> History:
    """Over the trigger with one round only: nothing for L1 or L2 to work on."""
    return History(session(1) + tool_round(1, result="x1.5 " * 3_000)[1:])


def open_breaker(ctl: CompactionController) -> None:
    ctl.restore_failures(3)
    assert ctl.breaker_open


def test_under_the_trigger_nothing_runs() -> None:
    summarize = ScriptedSummarizer()
    history = History(session(2))
    decision = controller(summarize).maybe_compact(history)
    assert (decision.action, decision.changed, summarize.calls) == ("none", False, 0)
    assert decision.tokens_before == decision.tokens_after < decision.threshold == 6_841


def test_over_the_trigger_it_compacts_and_records_the_decision() -> None:
    summarize = ScriptedSummarizer(default=NOTES)
    history = over()
    ctl = controller(summarize)
    seen: list[Any] = []
    ctl.events.subscribe(seen.append)
    decision = ctl.maybe_compact(history)
    assert decision.action == "compacted" and decision.changed
    assert decision.tokens_after < decision.threshold <= decision.tokens_before
    assert decision.tokens_after == ctl.count(history)
    steps = [e for e in seen if not isinstance(e, Status)]
    assert [type(e) for e in steps] == [CompactionStarted, Rewriting, Compacted]
    assert steps[-1].decision is decision and seen[-1] == Status("")  # progress cleared
    assert decision.levels[-1] == "L2 memory" and decision.summary_calls == 1
    assert history[1]["content"].startswith(MEMORY_HEADER)
    assert list(ctl.decisions) == [decision] and ctl.failure_count() == 0


def test_snip_alone_is_enough_when_it_gets_under_the_compact_target() -> None:
    summarize = ScriptedSummarizer()
    history = over(9)
    ctl = controller(summarize, keep_recent_turns=1, snip_batch_tokens=0)
    assert ctl.count(history) >= 6_841
    decision = ctl.maybe_compact(history)
    assert decision.levels == ["L1 snip"] and summarize.calls == 0
    assert decision.tokens_after <= 0.5 * 6_841  # NBAGENT_COMPACT_TARGET_RATIO
    assert any(is_snipped(m["content"]) for m in history)


@pytest.mark.parametrize(("ratio", "levels"), [(0.5, ["L1 snip", "L2 memory"]),
                                                (1.0, ["L1 snip"])])
def test_a_snip_that_leaves_the_history_near_the_trigger_does_not_end_the_compaction(
        ratio: float, levels: list[str]) -> None:
    """Each compaction rewrites the cached prompt: a snip that lands between the target and
    the trigger would buy a few turns before the next rewrite, so old turns are folded too."""
    summarize = ScriptedSummarizer(default=NOTES)
    history = over(9)
    ctl = controller(summarize, keep_recent_turns=3, snip_batch_tokens=0,
                     compact_target_ratio=ratio)
    snipped_only = controller(None, keep_recent_turns=3, snip_batch_tokens=0,
                              compact_target_ratio=1.0)
    alone = History(history.messages)
    assert snipped_only.maybe_compact(alone).levels[0] == "L1 snip"
    assert 0.5 * 6_841 < snipped_only.count(alone) < 6_841  # between the target and the trigger
    decision = ctl.maybe_compact(history)
    assert decision.levels == levels and summarize.calls == len(levels) - 1
    assert decision.tokens_after < decision.threshold


def test_a_snip_under_the_trigger_but_over_the_target_never_leads_to_a_full_summary() -> None:
    """Past L1 only the memory level aims for the target; when it cannot fold, the
    fallbacks (L3, the floor) run only over the trigger, as they always did."""
    messages = session(1)
    for t in (1, 2):
        messages += tool_round(t, result="x1.5 " * 1_000)
    history = History(messages)
    summarize = ScriptedSummarizer(default=nine_sections() + "\n- notes about sales_df")
    decision = controller(summarize, keep_recent_turns=1, snip_batch_tokens=0).maybe_compact(
        history)
    assert 0.5 * 6_841 < decision.tokens_after < 6_841 < decision.tokens_before
    assert decision.levels == ["L1 snip"] and "L3" not in decision.reason
    assert not any(m["content"] and str(m["content"]).startswith(SUMMARY_HEADER)
                   for m in history)


def test_l3_runs_only_when_l2_could_not() -> None:
    summarize = ScriptedSummarizer([nine_sections()])
    history = one_long_round()
    decision = controller(summarize).maybe_compact(history)
    assert decision.levels == ["L3 summary"], decision.reason
    assert "L2 memory: fewer than two rounds" in decision.reason
    assert history[1]["content"].startswith(SUMMARY_HEADER)


def test_a_summarizer_that_raises_at_the_turn_boundary_leaves_the_floor_and_counts_a_failure(
) -> None:
    """Changed on purpose (issue 13): it used to leave the history as it was and let it
    grow; now the deterministic floor stands in for the summary, counted as a failure."""
    history = over()
    summarize = ScriptedSummarizer(default=RuntimeError("provider down"))
    ctl = controller(summarize, snip_batch_tokens=10**9)
    decision = ctl.maybe_compact(history)
    assert decision.action == "compacted" and decision.levels == ["L3 floor"]
    assert "L2 memory: the summarizer raised RuntimeError: provider down" in decision.reason
    assert decision.tokens_after < decision.threshold and decision.failures == 1
    assert history[1]["content"].startswith((MEMORY_HEADER, SUMMARY_HEADER)) and summarize.calls == 1
    assert history[2]["content"].startswith("question 11")  # the latest ask, whole


def test_a_failed_compaction_leaves_the_history_byte_for_byte() -> None:
    history = over()
    before = copy.deepcopy(history.messages)

    class BrokenRefresh(Standalone):
        def refresh(self, messages: list[dict[str, Any]], limits: Any = None
                    ) -> list[dict[str, Any]]:
            return messages[1:]  # loses the system prompt: the result must be refused

    ctl = CompactionController(BrokenRefresh(ScriptedSummarizer(default=NOTES), MODEL,
                                             fixed_settings=Settings(max_context_tokens=WINDOW)))
    decision = ctl.maybe_compact(history)
    assert decision.action == "failed" and "changed the system prompt" in decision.reason
    assert history.messages == before and history.generation == 0 and not decision.changed
    assert decision.failures == 1


def test_the_breaker_opens_after_exactly_three_failures_and_then_calls_no_summarizer() -> None:
    """Changed on purpose (issue 13): with the breaker open the turn boundary still runs
    the deterministic levels (L1, then the floor standing in for the summarizer); the
    floor's success leaves the breaker open, since it proves nothing of the summarizer."""
    summarize = ScriptedSummarizer(default=RuntimeError("provider down"))
    ctl = controller(summarize, snip_batch_tokens=10**9)
    for expected in (1, 2, 3):
        assert ctl.maybe_compact(over()).failures == expected
    assert ctl.breaker_open and summarize.calls == 3  # (transient errors retry in the llm seam)
    history = over()
    fourth = ctl.maybe_compact(history)
    assert fourth.action == "compacted" and fourth.levels == ["L3 floor"]
    assert fourth.tokens_after < fourth.threshold
    assert summarize.calls == 3 and ctl.failure_count() == 3 and ctl.breaker_open
    assert not ctl.state(history).auto_compact_armed


def test_with_the_breaker_open_l1_still_runs_and_its_success_closes_the_breaker() -> None:
    """Changed on purpose (issue 13): the breaker stops model calls, not the snip."""
    summarize = ScriptedSummarizer()
    ctl = controller(summarize, keep_recent_turns=2, snip_batch_tokens=0)
    open_breaker(ctl)
    history = over(9)
    decision = ctl.maybe_compact(history)
    assert decision.action == "compacted" and decision.levels == ["L1 snip"]
    assert summarize.calls == 0 and any(is_snipped(m["content"]) for m in history)
    assert decision.failures == 0 and not ctl.breaker_open  # a real success resets the count


def test_with_the_breaker_open_l1_runs_mid_loop() -> None:
    summarize = ScriptedSummarizer()
    ctl = controller(summarize, keep_recent_turns=1)
    open_breaker(ctl)
    decision = ctl.on_tool_result(over())
    assert decision.action == "compacted" and decision.levels == ["L1 snip"]
    assert summarize.calls == 0


def test_with_the_breaker_open_l1_that_is_not_enough_leaves_the_floor() -> None:
    summarize = ScriptedSummarizer()
    ctl = controller(summarize, keep_recent_turns=10, snip_batch_tokens=0)
    open_breaker(ctl)
    decision = ctl.maybe_compact(over(12))  # only two rounds are old enough to snip
    assert decision.levels == ["L1 snip", "L3 floor"] and decision.action == "compacted"
    assert decision.failures == 3 and ctl.breaker_open  # the floor stood in: still open
    assert summarize.calls == 0


def test_a_manual_compact_runs_with_the_breaker_open_and_its_success_closes_it() -> None:
    summarize = ScriptedSummarizer([RuntimeError("down")] * 3, default=NOTES)
    ctl = controller(summarize, snip_batch_tokens=10**9)
    for _ in range(3):
        ctl.maybe_compact(over())
    assert ctl.breaker_open
    decision = ctl.compact_now(over())
    assert decision.action == "compacted" and decision.levels == ["L2 memory"]
    assert not ctl.breaker_open and ctl.failure_count() == 0


def test_a_manual_compact_whose_summarizer_raises_keeps_l1_and_falls_back_to_the_floor() -> None:
    """Changed on purpose (issue 13): it used to throw away what L1 did."""
    summarize = ScriptedSummarizer(default=RuntimeError("provider down"))
    ctl = controller(summarize, keep_recent_turns=2, snip_batch_tokens=0)
    history = over()
    decision = ctl.compact_now(history, focus="keep the column names")
    assert decision.action == "compacted" and decision.levels == ["L1 snip", "L3 floor"]
    assert "provider down" in decision.reason and decision.failures == 1  # degraded
    assert decision.degraded  # and said: the failure it counts is not hidden in a success
    assert decision.words().endswith("the deterministic floor stood in (failures in a row: 1)")
    assert history[1]["content"].startswith((MEMORY_HEADER, SUMMARY_HEADER))
    assert "keep the column names" in history[1]["content"]
    assert decision.tokens_after < decision.threshold


def test_without_a_summarizer_a_manual_compact_is_the_snip_and_the_floor_and_no_failure() -> None:
    ctl = controller(None, keep_recent_turns=2, snip_batch_tokens=0)
    history = over()
    decision = ctl.compact_now(history)
    assert decision.action == "compacted" and decision.levels == ["L1 snip", "L3 floor"]
    assert decision.summary_calls == 0 and decision.failures == 0
    assert not decision.degraded and "stood in" not in decision.words()  # chosen, not a failure
    assert history[1]["content"].startswith((MEMORY_HEADER, SUMMARY_HEADER))


def test_without_a_summarizer_the_turn_boundary_only_snips() -> None:
    ctl = controller(None, keep_recent_turns=2, snip_batch_tokens=0)
    decision = ctl.maybe_compact(over(9))
    assert decision.action == "compacted" and decision.levels == ["L1 snip"]


def test_reset_failures_closes_the_breaker() -> None:
    ctl = controller(ScriptedSummarizer(default=RuntimeError("down")), snip_batch_tokens=10**9)
    for _ in range(3):
        ctl.maybe_compact(over())
    assert ctl.breaker_open
    ctl.reset_failures()
    assert ctl.failure_count() == 0 and not ctl.breaker_open


def test_restore_failures_sets_the_count_a_resumed_session_had() -> None:
    ctl = controller(ScriptedSummarizer())
    ctl.restore_failures(2)
    assert (ctl.failure_count(), ctl.breaker_open) == (2, False)
    ctl.restore_failures(5)
    assert ctl.breaker_open and ctl.state(over()).breaker_open
    ctl.restore_failures(-1)
    assert ctl.failure_count() == 0


def test_a_compaction_still_over_the_trigger_counts_as_a_failure() -> None:
    history = over()
    bloated = "- sales_df " + "very long notes " * 3_000
    decision = controller(ScriptedSummarizer(default=bloated),
                          snip_batch_tokens=10**9).compact_now(history)
    assert decision.action == "failed" and decision.failures == 1, decision.reason
    assert "over the 6,841 trigger" in decision.reason


def test_focus_from_compact_now_reaches_the_summarizer() -> None:
    summarize = ScriptedSummarizer(default=NOTES)
    history = History(session(5))
    decision = controller(summarize).compact_now(history, focus="keep the exact column names")
    assert decision.action == "compacted" and decision.focus == "keep the exact column names"
    assert "keep the exact column names" in summarize.last_prompt()


def test_mid_loop_snip_fires_over_the_midloop_trigger_and_spares_the_pending_round() -> None:
    summarize = ScriptedSummarizer()
    history = over()
    ctl = controller(summarize, keep_recent_turns=1)
    decision = ctl.on_tool_result(history)
    assert (
        decision.action == "compacted" and decision.levels == ["L1 snip"] and summarize.calls == 0
    )
    assert decision.tokens_after <= 0.5 * 6_841 + 800
    assert not is_snipped(history[-2]["content"])  # the newest round's result stays


def test_mid_loop_never_touches_a_pending_tool_call() -> None:
    messages = session(12)
    messages.append({"role": "user", "content": "and col_99?"})
    messages.append({"role": "assistant", "content": None, "tool_calls": [{
        "id": "call-pending", "type": "function",
        "function": {"name": "describe", "arguments": "{}"}}]})
    history = History(messages)
    decision = controller(ScriptedSummarizer(), keep_recent_turns=1).on_tool_result(history)
    assert decision.action == "compacted"
    assert history.pending_tool_calls == ["call-pending"] and history[-1] == messages[-1]


def test_mid_loop_below_the_trigger_does_nothing() -> None:
    decision = controller(ScriptedSummarizer()).on_tool_result(History(session(2)))
    assert decision.action == "none" and decision.threshold == 6_636


def test_mid_loop_full_compaction_is_opt_in() -> None:
    summarize = ScriptedSummarizer(default=NOTES)
    history = over()
    decision = controller(summarize, midloop_full_compact=True).on_tool_result(history)
    assert decision.trigger == "midloop" and "L2 memory" in decision.levels


def test_mid_loop_full_compaction_stops_after_l1_when_l1_is_enough() -> None:
    summarize = ScriptedSummarizer()
    ctl = controller(summarize, midloop_full_compact=True, keep_recent_turns=2,
                     snip_batch_tokens=0)
    decision = ctl.on_tool_result(over(9))
    assert decision.levels == ["L1 snip"] and summarize.calls == 0


def test_an_overflow_error_runs_l4() -> None:
    history = over()
    ctl = controller(ScriptedSummarizer())
    size = ctl.count(history)
    decision = ctl.handle_ptl_error(history, parse_token_limits(f"prompt is too long: {size} tokens > {size // 2} "
                                    "maximum"))
    assert decision.trigger == "overflow" and decision.levels == ["L4 overflow"]
    assert decision.tokens_after <= 0.9 * size // 2


def test_an_l4_that_shrank_the_history_is_a_success_even_over_the_trigger() -> None:
    """Changed on purpose (issue 13): an L4 that made the request fit resets the count,
    so the breaker can close by itself (it used to count as a failure)."""
    history = over(16)
    ctl = controller(ScriptedSummarizer())
    ctl.restore_failures(2)
    # a reply cut by the window: no limit stated, so the oldest three rounds go
    decision = ctl.handle_ptl_error(history, parse_token_limits("the context window was exhausted during the reply"))
    assert decision.action == "compacted" and decision.levels == ["L4 overflow"]
    assert decision.threshold < decision.tokens_after < decision.tokens_before
    assert decision.failures == 0


def test_an_overflow_with_nothing_to_drop_is_a_failure() -> None:
    history = History(session(1))
    before = copy.deepcopy(history.messages)
    decision = controller(ScriptedSummarizer()).handle_ptl_error(history, parse_token_limits("too long"))
    assert decision.action == "failed" and decision.failures == 1
    assert history.messages == before


def test_disabled_compaction_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_DISABLE_COMPACT", "1")
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", str(WINDOW))
    ctl = CompactionController(summarize=ScriptedSummarizer(), window=MODEL)
    decision = ctl.maybe_compact(over())
    assert decision.action == "none" and "off" in decision.reason
    assert ctl.on_tool_result(over()).action == "none"


def test_settings_and_window_are_read_at_each_use(monkeypatch: pytest.MonkeyPatch) -> None:
    ctl = CompactionController(summarize=ScriptedSummarizer(), window=MODEL)
    assert ctl.thresholds().auto_compact == 167_000  # the 200,000 default window
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", str(WINDOW))
    assert ctl.thresholds().auto_compact == 6_841


def test_a_window_function_is_asked_each_time_so_a_learned_limit_takes_effect() -> None:
    current = [WindowInfo(MODEL, 200_000, "table", None, None)]

    class Moving(Standalone):
        def window(self) -> WindowInfo:
            return current[0]

    ctl = CompactionController(Moving(ScriptedSummarizer(default=NOTES),
                                      fixed_settings=Settings()))
    history = over()
    assert ctl.maybe_compact(history).action == "none"
    current[0] = WindowInfo(MODEL, WINDOW, "learned", None, None)
    assert ctl.state(history).window_source == "learned"
    assert ctl.maybe_compact(history).action == "compacted"


def test_a_custom_count_is_what_the_triggers_see() -> None:
    class Counting(Standalone):
        def count(self, history: History, limits: Any = None) -> int:
            return 10 * len(history)

    ctl = CompactionController(Counting(ScriptedSummarizer(), MODEL,
                                        fixed_settings=Settings(max_context_tokens=WINDOW)))
    history = History(session(2))
    assert ctl.count(history) == 90 and ctl.state(history).tokens == 90


def test_refresh_runs_after_a_compaction_and_not_when_nothing_ran() -> None:
    state = {"role": "user", "content": f"{STATE_HEADER}\nsales_df: DataFrame (3, 2)"}
    calls: list[int] = []

    class Refreshing(Standalone):
        def refresh(self, messages: list[dict[str, Any]], limits: Any = None
                    ) -> list[dict[str, Any]]:
            calls.append(len(messages))
            return [messages[0], state, *messages[1:]]

    ctl = CompactionController(Refreshing(ScriptedSummarizer(default=NOTES), MODEL,
                                          fixed_settings=Settings(max_context_tokens=WINDOW)))
    ctl.maybe_compact(History(session(2)))
    assert calls == []
    history = over()
    assert ctl.maybe_compact(history).action == "compacted"
    assert len(calls) == 1 and state in history.messages


def test_undo_puts_back_the_history_until_something_new_arrives() -> None:
    history = over()
    before = history.messages
    ctl = controller(ScriptedSummarizer(default=NOTES))
    rewrites: list[int] = []
    ctl.events.subscribe(lambda e: rewrites.append(len(e.messages))
                         if isinstance(e, Rewriting) else None)
    ctl.maybe_compact(history)
    ctl.undo(history)
    assert history.messages == before and rewrites[-1] == len(before)  # written ahead too
    with pytest.raises(Exception, match="no compaction to undo"):
        ctl.undo(history)
    ctl.maybe_compact(history)
    history.append({"role": "user", "content": "one more"})
    with pytest.raises(Exception, match="went on since \\(1 new messages\\)"):
        ctl.undo(history)


def test_same_input_same_output() -> None:
    outputs = []
    for _ in range(2):
        history = over()
        controller(ScriptedSummarizer(default=NOTES)).maybe_compact(history)
        outputs.append(history.messages)
    assert outputs[0] == outputs[1]


def test_decisions_are_pydantic_records() -> None:
    decision = controller(ScriptedSummarizer()).maybe_compact(History(session(1)))
    assert isinstance(decision, Decision)
    assert Decision.model_validate_json(decision.model_dump_json()) == decision


def test_a_weak_summarizer_keeps_the_session_alive_then_opens_the_breaker() -> None:
    """retry → deterministic floor → breaker: what a 135M model needs."""
    summarize = ScriptedSummarizer(default="I think the data is nice.")  # never the sections
    ctl = controller(summarize)
    for attempt in (1, 2, 3):
        history = one_long_round()
        decision = ctl.maybe_compact(history)
        assert decision.action == "compacted" and decision.levels == ["L3 summary"]
        assert decision.tokens_after < decision.threshold and decision.failures == attempt
        assert "deterministic floor" in decision.reason
    assert ctl.breaker_open and summarize.calls == 6
    # with the breaker open the deterministic levels still compact, with no model call
    assert ctl.maybe_compact(one_long_round()).levels == ["L3 floor"]
    assert summarize.calls == 6 and ctl.breaker_open


def test_the_summarizers_window_bounds_what_one_fold_sends() -> None:
    prompts = []
    for summarizer_window in (None, 1_000):
        summarize = ScriptedSummarizer(default=NOTES)
        CompactionController(summarize=summarize, window=MODEL,
                             summarizer_window=summarizer_window,
                             settings=Settings(max_context_tokens=WINDOW)).maybe_compact(over())
        prompts.append(summarize.last_prompt())
    unbounded, bounded = prompts
    assert len(bounded) < 4 * 1_000 < len(unbounded)  # (about four characters a token)


def test_calls_and_costs_of_every_level_add_up_in_the_decision() -> None:
    summarize = ScriptedSummarizer([SummaryReply("not notes", cost=0.25),
                                    SummaryReply(NOTES, cost=0.5)])
    decision = controller(summarize).maybe_compact(over())
    assert decision.levels[-1] == "L2 memory"
    assert (decision.summary_calls, decision.cost) == (2, 0.75)
    assert decision.summary is not None and decision.summary.startswith(MEMORY_HEADER)
