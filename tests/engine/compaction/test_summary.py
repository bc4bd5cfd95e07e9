"""L3 (`full_compact`): one nine-section summary with the floor under it, the latest user
message kept; an invalid summary retried once, then the floor; sections parsed from
common heading styles; an over-long transcript keeps its first request and recent part."""

from __future__ import annotations

import pytest

from nbagent import CompactionFailed
from nbagent.compaction import (
    SECTIONS,
    full_compact,
    parse_sections,
    session_memory_compact,
    validate_summary,
)
from nbagent.engine import (
    SUMMARY_HEADER,
)
from nbagent.engine.compaction._summary import says_nothing
from nbagent.testing import ScriptedSummarizer, parse_floor
from tests.engine.compaction.sessions import (
    FLOOR_NAMES,
    KNOBS,
    data_session,
)
from tests.helpers import SYSTEM, nine_sections, session, tool_round


def test_full_compact_writes_nine_sections_and_keeps_the_latest_user_message() -> None:
    messages = session(6) + [{"role": "user", "content": "Now plot col_5 by region."}]
    summarize = ScriptedSummarizer([nine_sections()])
    compacted = full_compact(messages, summarize)
    assert compacted.changed and compacted.summary_calls == 1
    assert compacted[0] == SYSTEM and compacted[-1] == messages[-1] and len(compacted) == 3
    summary = compacted[1]["content"]
    assert summary.startswith(SUMMARY_HEADER) and not validate_summary(summary)
    assert "Load data/sales.csv into sales_df" in summary  # floor: the user's words verbatim
    assert "data/sales.csv" in parse_sections(summary)["Files and Code Sections"]


def test_focus_instructions_reach_the_summarizer() -> None:
    summarize = ScriptedSummarizer([nine_sections()])
    full_compact(session(4), summarize, focus="keep the exact column names")
    assert "keep the exact column names" in summarize.last_prompt()


def test_an_invalid_summary_is_retried_once_then_falls_back_to_the_floor() -> None:
    summarize = ScriptedSummarizer(["## 1. Primary Request and Intent\nonly one", "Error: overloaded"])
    compacted = full_compact(session(4), summarize)
    assert compacted.changed and compacted.degraded and compacted.summary_calls == 2
    assert "missing sections" in summarize.last_prompt()  # the retry says what was wrong
    summary = compacted[1]["content"]
    assert not validate_summary(summary)  # the floor makes every section present
    assert "Load data/sales.csv into sales_df" in summary and "data/sales.csv" in summary
    assert "invalid twice" in compacted.reason


def test_without_the_floor_an_invalid_summary_twice_is_a_failure() -> None:
    summarize = ScriptedSummarizer(["no sections here", "still none"])
    with pytest.raises(CompactionFailed, match="invalid summary twice") as caught:
        full_compact(session(4), summarize, floor_fallback=False)
    assert caught.value.summary_calls == 2


def test_a_retry_that_succeeds_is_used() -> None:
    summarize = ScriptedSummarizer(["", nine_sections()])
    assert full_compact(session(4), summarize).summary_calls == 2


@pytest.mark.parametrize(
    "reply",
    ["", "   ", "Error: rate limited", "I'm sorry, I can't help with that."],
    ids=["empty", "blank", "error", "refusal"],
)
def test_junk_replies_are_invalid(reply: str) -> None:
    assert validate_summary(reply)


def test_an_over_long_transcript_keeps_the_first_request_and_the_recent_part() -> None:
    messages = session(40)
    summarize = ScriptedSummarizer([nine_sections()])
    full_compact(messages, summarize, max_input_tokens=4_000)
    prompt = summarize.last_prompt()
    assert "Load data/sales.csv into sales_df" in prompt  # the first user request
    assert "question 39" in prompt and "question 38" in prompt  # the recent work
    assert "question 3:" not in prompt and "earlier messages omitted" in prompt  # the middle went


def test_sections_parse_from_common_heading_styles() -> None:
    text = "\n".join(f"**{n}. {title}:**\nbody {n}" for n, title in enumerate(SECTIONS, 1))
    assert list(parse_sections(text)) == list(SECTIONS) and not validate_summary(text)


def test_a_summary_after_memory_keeps_the_memory_floor() -> None:
    summarize = ScriptedSummarizer(["- visits explored", nine_sections()])
    messages = list(session_memory_compact(data_session(), summarize, **KNOBS))
    messages += tool_round(20)
    summary = full_compact(messages, summarize)[1]["content"]
    assert "Use dose_mg. From now on exclude the pilot clinic." in summary
    assert "Load data/trial/visits.csv please." in summary
    assert FLOOR_NAMES <= set(parse_floor(summary).names)


@pytest.mark.parametrize(("body", "nothing"), [
    ("None.", True), ("n/a", True), ("- ", True), ("No errors so far.", True), ("", True),
    ("No missing values in revenue.", False), ("Fixed the KeyError.", False)])
def test_what_counts_as_saying_nothing(body: str, nothing: bool) -> None:
    assert says_nothing(body) is nothing
