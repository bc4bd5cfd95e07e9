"""The compaction policy as data: which levels `levels_for` returns for each trigger,
and that each level is a plain `list → list` function."""

from __future__ import annotations

import copy
import inspect
from dataclasses import replace
from typing import Any

import pytest

from nbagent import CompactionController, History, Settings, thresholds
from nbagent.compaction import (
    LADDER,
    Level,
    LevelResult,
    Rung,
    context_collapse,
    describe_ladder,
    levels_for,
)
from nbagent.testing import MEMORY_HEADER, SUMMARY_HEADER, ScriptedSummarizer, is_snipped
from tests.helpers import session

LIMITS = thresholds("local/test", settings=Settings(max_context_tokens=8_192))


def names(trigger: Any, *, summarize: Any = "scripted", **options: Any) -> list[str]:
    settings = options.pop("settings", Settings())
    if summarize == "scripted":
        summarize = ScriptedSummarizer()
    levels = levels_for(trigger, settings=settings, limits=LIMITS, summarize=summarize,
                        **options)
    assert all(isinstance(level, Level) for level in levels)
    return [level.name for level in levels]


@pytest.mark.parametrize(
    ("trigger", "options", "expected"),
    [
        ("auto", {}, ["L1 snip", "L2 memory", "L3 summary", "L4 room"]),
        ("auto", {"breaker_open": True}, ["L1 snip", "L3 floor", "L4 room"]),
        ("auto", {"summarize": None}, ["L1 snip", "L3 floor", "L4 room"]),
        ("manual", {}, ["L1 snip", "L2 memory", "L3 summary"]),
        ("manual", {"breaker_open": True}, ["L1 snip", "L2 memory", "L3 summary"]),
        ("manual", {"summarize": None}, ["L1 snip", "L3 floor"]),
        ("midloop", {}, ["L1 snip"]),
        ("midloop", {"settings": Settings(midloop_full_compact=True)},
         ["L1 snip", "L2 memory", "L3 summary", "L4 room"]),
        ("midloop", {"settings": Settings(midloop_full_compact=True), "breaker_open": True},
         ["L1 snip", "L3 floor", "L4 room"]),
        ("overflow", {}, ["L4 overflow"]),
        ("overflow", {"breaker_open": True, "summarize": None}, ["L4 overflow"]),
    ],
    ids=["auto", "auto-breaker-open", "auto-no-summarizer", "manual", "manual-breaker-open",
         "manual-no-summarizer", "midloop", "midloop-full", "midloop-full-breaker-open",
         "overflow", "overflow-breaker-open"],
)
def test_each_trigger_has_its_documented_ladder(
    trigger: str, options: dict[str, Any], expected: list[str]
) -> None:
    assert names(trigger, **options) == expected


def test_only_the_summary_levels_call_a_model_and_l3_is_l2s_fallback() -> None:
    levels = levels_for("auto", settings=Settings(), limits=LIMITS, summarize=ScriptedSummarizer())
    assert [(level.calls_model, level.fallback) for level in levels] == [
        (False, False), (True, False), (True, True), (False, False)]
    manual = levels_for("manual", settings=Settings(), limits=LIMITS, summarize=None)
    assert not any(level.calls_model for level in manual)


def test_building_the_ladder_calls_nothing() -> None:
    summarize = ScriptedSummarizer()
    levels_for("manual", settings=Settings(), limits=LIMITS, summarize=summarize, focus="x")
    assert summarize.calls == 0


def test_a_level_maps_a_message_list_to_a_new_one_and_leaves_its_input_alone() -> None:
    messages = session(12)
    before = copy.deepcopy(messages)
    snip, *_ = levels_for("auto", settings=Settings(keep_recent_turns=2, snip_batch_tokens=0),
                          limits=LIMITS, summarize=None)
    result = snip(messages)
    assert isinstance(result, LevelResult) and result.changed
    assert messages == before
    assert sum(is_snipped(m["content"]) for m in result) == 10


def test_the_midloop_snip_stops_at_its_target() -> None:
    messages = session(12)
    settings = Settings(keep_recent_turns=1, snip_batch_tokens=0)
    everything = levels_for("midloop", settings=settings, limits=LIMITS, summarize=None)[0]
    targeted = levels_for("midloop", settings=settings, limits=LIMITS, summarize=None,
                          target_tokens=15_000)[0]
    assert sum(is_snipped(m["content"]) for m in everything(messages)) == 11
    assert 0 < sum(is_snipped(m["content"]) for m in targeted(messages)) < 11


def test_the_focus_reaches_the_summary_levels() -> None:
    summarize = ScriptedSummarizer(default="- notes about sales_df")
    _, memory, _ = levels_for("manual", settings=Settings(), limits=LIMITS, summarize=summarize,
                              focus="the revenue column")
    assert memory(session(12)).changed
    assert "the revenue column" in summarize.last_prompt()


def test_the_floor_level_needs_no_model_and_keeps_the_focus() -> None:
    floor = levels_for("manual", settings=Settings(), limits=LIMITS, summarize=None,
                       focus="keep col_3")[-1]
    result = floor(session(12))
    assert result.changed and not result.degraded and result.summary_calls == 0
    assert result[1]["content"].startswith((MEMORY_HEADER, SUMMARY_HEADER))
    assert "Compacted with the focus: keep col_3" in result[1]["content"]
    assert "col_3" in result[1]["content"] and result[-1] == session(12)[-1]  # tail verbatim


def test_the_overflow_level_fits_the_limit_the_provider_stated() -> None:
    messages = session(12)
    (drop,) = levels_for("overflow", settings=Settings(), limits=LIMITS, summarize=None,
                         overflow=(18_000, 9_000))
    result = drop(messages)
    assert result.changed and "9,000-token limit" in result.reason


def test_the_ladder_is_one_table_every_trigger_reads() -> None:
    triggers = [("auto", {}), ("auto", {"summarize": None}), ("manual", {}),
                ("midloop", {}), ("overflow", {})]
    used = {name for trigger, options in triggers for name in names(trigger, **options)}
    assert used == {rung.name for rung in LADDER}  # no level outside the table, none unused
    table = describe_ladder()
    for rung in LADDER:
        assert rung.name in table and rung.function.__name__ in table and rung.what in table


def test_every_level_takes_counts_by_the_same_keyword() -> None:
    for rung in LADDER:
        parameter = inspect.signature(rung.function).parameters["counts"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, rung.name
        assert rung.function.__module__.startswith("nbagent.engine.compaction."), rung.name


def test_a_terminal_row_stops_the_ladder_whatever_its_name() -> None:
    ran: list[str] = []

    def after(messages: Any, *, counts: Any = None) -> LevelResult:
        ran.append("after")
        return LevelResult.unchanged(messages, "should not run")

    floor = next(r for r in LADDER if r.terminal)
    ladder = [*(replace(r, name="L9 my floor") if r is floor else r for r in LADDER),
              Rung("L9 after", after, lambda c: {}, "never reached", lambda m, n, c: "…",
                   runs="without_model")]
    settings = Settings(max_context_tokens=8_192, keep_recent_turns=2)
    ctl = CompactionController(window="local/test", settings=settings, ladder=ladder)
    decision = ctl.compact_now(History(session(12)))
    assert decision.action == "compacted" and decision.levels[-1] == "L9 my floor"
    assert ran == []


def test_a_new_level_is_one_row() -> None:
    collapse = Rung("L5 collapse", context_collapse, lambda c: {"max_chars": 50},
                    "cut big tool results", lambda m, n, c: "collapsing tool results…")
    ctl = CompactionController(window="local/test", ladder=[collapse, *LADDER],
                               settings=Settings(max_context_tokens=8_192))
    seen: list[Any] = []
    ctl.events.subscribe(seen.append)
    decision = ctl.compact_now(History(session(12)))
    assert decision.levels[0] == "L5 collapse"
    assert any(getattr(e, "text", None) == "collapsing tool results…" for e in seen)
