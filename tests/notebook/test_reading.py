"""What a meter reads from a context state (`widgets/_reading.py`): each level named in
words, never green with 15% left, a broken breaker and the off switch told apart."""

from __future__ import annotations

import pytest
from nbagent.widgets import MeterReading

from nbagent import Settings
from tests.notebook.helpers import state


@pytest.mark.parametrize(
    ("tokens", "level", "words"),
    [
        (1_000, "ok", "ok"),
        (5_900, "warning", "warning"),  # 14% left: the engine still says ok; the meter warns
        (6_100, "warning", "warning"),
        (6_500, "error", "compacting soon"),
        (6_900, "compact", "compacting"),
        (7_300, "blocking", "compacting at the next chat"),
    ],
    ids=["ok", "low-space", "warning", "soon", "compacting", "blocked"],
)
def test_the_meter_names_each_level_in_words(tokens: int, level: str, words: str) -> None:
    reading = MeterReading.of(state(tokens))
    assert (reading.level, reading.label) == (level, words)
    assert reading.status == words
    assert f"context left until auto-compact ({words})" in reading.text()


def test_fifteen_percent_left_is_never_green() -> None:
    reading = MeterReading.of(state(5_815))
    assert round(reading.percent_left) == 15 and reading.level != "ok"
    assert "success" not in reading.html()


def test_the_breaker_and_the_setting_read_differently() -> None:
    breaker = MeterReading.of(state(2_000, breaker_open=True))
    disabled = MeterReading.of(state(2_000, settings=Settings(max_context_tokens=8_192,
                                                               disable_compact=True)))
    assert "%compact" in breaker.status and "3×" in breaker.status
    assert "NBAGENT_DISABLE_COMPACT" in disabled.status and "%compact" not in disabled.status
    assert breaker.level == "warning" and disabled.level == "ok"  # a broken breaker is not ok
    assert "auto-compact at" not in breaker.detail
    for off in (breaker, disabled):  # nothing compacts by itself: the base is the window's
        assert off.headline.endswith("% context left in the effective window")
        assert off.detail.startswith("2,000 tokens · effective window 7,373 · window 8,192")
