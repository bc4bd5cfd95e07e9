from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nbagent import Settings, WindowInfo, context_state, thresholds
from nbagent.agent.models import model_info

CLAUDE = "anthropic/claude-sonnet-4-20250514"


def window(raw: int, output: int | None = None) -> Any:
    return lambda model: {"max_input_tokens": raw, "max_output_tokens": output}


def test_a_200k_claude_model_triggers_at_167000_via_litellms_real_model_info() -> None:
    limits = thresholds(CLAUDE, model_info=model_info)
    assert limits.window.max_output is not None and limits.window.max_output >= 20_000
    assert (limits.effective_window, limits.auto_compact) == (180_000, 167_000)


def test_a_small_max_output_gives_a_small_reserve() -> None:
    limits = thresholds("m", model_info=window(200_000, 8_192))
    assert limits.output_reserve == 8_192 and limits.auto_compact == 200_000 - 8_192 - 13_000


def test_the_1m_suffix_window() -> None:
    limits = thresholds(CLAUDE + "[1m]", model_info=window(200_000, 64_000))
    assert limits.window.raw_window == 1_000_000 and limits.auto_compact == 1_000_000 - 33_000


def test_auto_compact_window_caps_the_raw_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_AUTO_COMPACT_WINDOW", "100000")
    limits = thresholds(CLAUDE, model_info=window(200_000, 64_000))
    assert limits.context_window == 100_000 and limits.effective_window == 90_000
    assert limits.auto_compact == 90_000 - 6_500


@pytest.mark.parametrize("raw", [2_048, 8_192, 32_768])
def test_small_windows_scale_every_buffer_down(raw: int) -> None:
    limits = thresholds("local", model_info=window(raw, raw))
    scale = raw / 200_000
    assert limits.output_reserve == round(20_000 * scale)
    assert limits.auto_compact == raw - round(20_000 * scale) - round(13_000 * scale)
    assert 0.8 * raw < limits.auto_compact < raw  # not negative, not a 100K floor


@given(st.integers(64, 4_000_000), st.none() | st.integers(1, 200_000))
def test_levels_are_distinct_ordered_and_inside_the_window(raw: int, output: int | None) -> None:
    t = thresholds("m", model_info=window(raw, output))
    assert 0 < t.warning < t.error < t.midloop < t.auto_compact < t.blocking
    assert t.blocking <= t.effective_window <= t.context_window == raw


@given(st.integers(1, 63))
def test_tiny_windows_never_go_negative(raw: int) -> None:
    t = thresholds("m", model_info=window(raw))
    assert min(t.warning, t.error, t.midloop, t.auto_compact, t.blocking) >= 0
    assert t.blocking <= raw


@pytest.mark.parametrize(
    ("tokens", "level"),
    [
        (0, "ok"),
        (125_249, "ok"),
        (125_250, "warning"),  # a quarter of the way below the trigger: 25% left warns
        (157_000, "error"),
        (167_000, "compact"),
        (177_000, "blocking"),
        (400_000, "blocking"),
    ],
    ids=str,
)
def test_each_level_starts_at_its_own_boundary(tokens: int, level: str) -> None:
    state = context_state(CLAUDE, tokens, model_info=window(200_000, 64_000))
    assert state.level == level


def test_percent_left_is_measured_against_the_auto_compact_trigger() -> None:
    state = context_state(CLAUDE, 83_500, model_info=window(200_000, 64_000))
    assert state.percent_left == 50.0
    assert state.auto_compact_armed and state.window_source == "litellm"
    assert context_state(CLAUDE, 500_000, model_info=window(200_000, 64_000)).percent_left == 0.0


def test_disabled_compaction_is_not_armed_and_never_reports_compact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NBAGENT_DISABLE_COMPACT", "1")
    state = context_state(CLAUDE, 170_000, model_info=window(200_000, 64_000))
    assert not state.auto_compact_armed and state.level == "error"
    assert state.percent_left == pytest.approx(100 * 10_000 / 180_000)


def test_an_open_breaker_disarms_auto_compaction() -> None:
    state = context_state(CLAUDE, 170_000, breaker_open=True, model_info=window(200_000, 64_000))
    assert not state.auto_compact_armed and state.level == "error"


def test_thresholds_can_be_reused_for_many_checks() -> None:
    limits = thresholds(CLAUDE, settings=Settings(), model_info=window(200_000, 64_000))
    assert context_state(CLAUDE, 1, limits=limits).thresholds is limits


def test_a_resolved_window_is_taken_as_it_is() -> None:
    info = WindowInfo("m", 8_192, "server", 512, "server")
    limits = thresholds(info, settings=Settings(max_context_tokens=100_000))
    assert limits.window is info and limits.context_window == 8_192
    assert limits.output_reserve == 512 and limits.auto_compact == 8_192 - 512 - 532
    assert context_state(info, 4_000, settings=Settings()).window_source == "server"


def test_a_model_name_is_resolved_without_model_info_unless_given() -> None:
    assert thresholds(CLAUDE).window.source == "table"
    assert thresholds(CLAUDE, model_info=window(100_000, 8_000)).context_window == 100_000


def test_compaction_is_armed_with_no_note() -> None:
    state = context_state(CLAUDE, 1_000, model_info=window(200_000, 64_000))
    assert state.auto_compact_armed and not state.breaker_open and state.compaction_note is None


def test_an_open_breaker_is_said_apart_from_auto_compact_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = context_state(CLAUDE, 1_000, breaker_open=True, model_info=window(200_000, 64_000))
    assert state.breaker_open and state.compaction_note is not None
    assert state.compaction_note.startswith("breaker open")
    assert "agent.compact()" in state.compaction_note and "%" not in state.compaction_note
    monkeypatch.setenv("NBAGENT_DISABLE_COMPACT", "1")
    off = context_state(CLAUDE, 1_000, model_info=window(200_000, 64_000))
    assert off.compaction_note == "auto-compact off (NBAGENT_DISABLE_COMPACT)"
    assert off.compaction_note != state.compaction_note
