"""The one-off lines (`widgets/_report.py`): a compaction in words and with its summary,
its progress while it runs, an error and an interrupt in one line each, the thresholds
`%context` lists."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.utils.capture import capture_output
from nbagent.widgets import (
    ProgressLine,
    decision_words,
    show_breakdown,
    show_decision,
    show_error,
    show_interrupted,
)

from nbagent import METER_LEVELS, History, MeterLevel
from nbagent.engine import context_breakdown
from nbagent.events import CompactionStarted, Status
from tests.notebook.helpers import decision, plain, state
from tests.notebook.helpers import shown as screen  # (a test names its own output `shown`)

pytestmark = pytest.mark.usefixtures("shell")  # display() publishes through a shell


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({}, "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call"),
        ({"levels": ["L1 snip", "L2 memory"], "summary_calls": 2},
         "compacted (L1 snip → L2 memory): 1,972 → 1,463 tokens, 2 summarizer calls"),
        ({"levels": ["L1 snip"], "summary_calls": 0},
         "compacted (L1 snip): 1,972 → 1,463 tokens, 0 summarizer calls"),
        ({"action": "none", "levels": [], "reason": "under the trigger", "changed": False},
         "nothing compacted: under the trigger (1,972 tokens)"),
        ({"action": "failed", "reason": "the summarizer timed out", "changed": False},
         "compaction failed: the summarizer timed out — the history is unchanged (1,972 tokens)"),
    ],
    ids=["one-call", "two-calls", "no-call", "nothing", "failed"],
)
def test_compaction_words(fields: dict[str, Any], words: str) -> None:
    assert decision_words(decision(**fields)) == words


def test_percent_compact_shows_one_line_and_the_summary() -> None:
    with capture_output() as captured:
        show_decision(decision(summary="## 1. Primary Request\nkeep <columns>"))
    (shown,) = screen(captured)
    assert shown["text/plain"] == "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call"
    assert "<details><summary>summary</summary><pre>## 1. Primary Request\nkeep &lt;columns&gt;" in (
        shown["text/html"])


def test_an_error_is_one_line_with_no_stderr() -> None:
    with capture_output() as captured:
        show_error("No API key for openai/gpt-4o: set OPENAI_API_KEY, e.g. %env OPENAI_API_KEY=…")
    assert plain(captured) == [
        "nbagent: No API key for openai/gpt-4o: set OPENAI_API_KEY, e.g. %env OPENAI_API_KEY=…"]
    assert captured.stderr == "" and captured.stdout == ""
    assert 'class="nbagent-error"' in screen(captured)[0]["text/html"]


def test_an_interrupt_is_one_line() -> None:
    with capture_output() as captured:
        show_interrupted()
    assert plain(captured) == ["interrupted — the session is intact"]


def test_the_progress_line_starts_at_once_and_follows_status_lines() -> None:
    progress = ProgressLine()
    with capture_output() as captured:
        progress(CompactionStarted("manual", 5_000, 6_841, None))
        assert plain(captured) == ["compacting…"]
        progress(Status("snipping 3 old tool results (2,400 tokens)…"))
        progress(Status("summarizing turns 3–41 (12,400 tokens)…"))
        assert plain(captured) == ["summarizing turns 3–41 (12,400 tokens)…"]
        progress.clear()
    assert plain(captured) == []



def thresholds_line() -> str:
    """The `%context` line of thresholds for 1,000 tokens in an 8,192-token window."""
    history = History([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}])
    with capture_output() as captured:
        show_breakdown(context_breakdown(history, [], state(1_000)), cost=0.0)
    line = next(line for line in "\n".join(plain(captured)).splitlines() if "thresholds:" in line)
    return line[line.index("thresholds:"):]


def test_the_thresholds_line_names_where_each_meter_level_starts_lowest_first() -> None:
    limits = state(1_000).thresholds
    assert thresholds_line() == (
        f"thresholds: warning {limits.warning:,} · error {limits.error:,} · mid-loop "
        f"{limits.midloop:,} · auto-compact {limits.auto_compact:,} (armed) · blocking "
        f"{limits.blocking:,}")


def test_a_new_meter_level_is_listed_without_an_edit_there(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a level starting where the effective window ends (its name borrowed: the line reads
    # a level's `starts_at`, the colour table its name)
    extra = MeterLevel("blocking", "full", "effective_window")
    monkeypatch.setattr("nbagent.widgets._report.METER_LEVELS", (*METER_LEVELS, extra))
    limits = state(1_000).thresholds
    assert thresholds_line().endswith(
        f"blocking {limits.blocking:,} · effective {limits.effective_window:,}")  # words of
    # `Thresholds.words`, as the docs' table header says them


def test_a_level_that_starts_where_the_mid_loop_snip_does_names_it_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a meter level at the mid-loop trigger ("trimming tool results", say): the line lists
    # where each level starts and the mid-loop snip's trigger, and that is one threshold
    extra = MeterLevel("compact", "trimming", "midloop")
    monkeypatch.setattr("nbagent.widgets._report.METER_LEVELS", (*METER_LEVELS, extra))
    assert thresholds_line().count("mid-loop") == 1, thresholds_line()
