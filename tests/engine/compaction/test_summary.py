"""L3 (`full_compact`): one summary, a section per `SECTIONS` title, with the floor under it,
the latest user message kept; an invalid summary retried once, then the floor; sections parsed
from common heading styles; an over-long transcript keeps its first request and recent part;
the prompt counts the sections from the table, and its request is told from the memory's."""

from __future__ import annotations

import re

import pytest

from nbagent import CompactionFailed
from nbagent.compaction import (
    SECTIONS,
    full_compact,
    is_summary_request,
    parse_sections,
    session_memory_compact,
    validate_summary,
)
from nbagent.engine import (
    SUMMARY_HEADER,
)
from nbagent.engine.compaction import _summary, extract_floor
from nbagent.engine.compaction._floor_render import render_floor_parts
from nbagent.engine.compaction._summary import says_nothing
from nbagent.testing import ScriptedSummarizer, parse_floor
from tests.engine.compaction.sessions import (
    FLOOR_NAMES,
    KNOBS,
    data_session,
)
from tests.helpers import SYSTEM, nine_sections, session, tool_round


def test_full_compact_writes_every_section_and_keeps_the_latest_user_message() -> None:
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


def test_the_full_summary_request_is_told_from_the_memory_request() -> None:
    summarize = ScriptedSummarizer(["no sections", nine_sections()], default="- notes")
    full_compact(session(4), summarize, focus="keep the column names")
    asked, retried = summarize.requests[:2]
    assert is_summary_request(asked) and is_summary_request(retried)  # the retry too
    assert is_summary_request(str(asked[-1]["content"]))  # the prompt's text alone
    assert not is_summary_request(str(retried[-1]["content"]))  # the retry's words alone
    session_memory_compact(data_session(), summarize, **KNOBS)
    assert not is_summary_request(summarize.requests[-1])
    assert not is_summary_request(str(summarize.requests[-1][-1]["content"]))
    assert not is_summary_request([{"role": "user", "content": "Summarize sales_df please."}])


@pytest.mark.parametrize(("count", "word"), [(9, "nine"), (10, "ten"), (13, "13")])
def test_the_prompt_counts_the_sections_of_the_table(
        monkeypatch: pytest.MonkeyPatch, count: int, word: str) -> None:
    titles = (*SECTIONS, "Data sources", "Open questions", "Charts", "Models")[:count]
    monkeypatch.setattr(_summary, "SECTIONS", titles)
    summarize = ScriptedSummarizer(["no sections", "still none"])
    full_compact(session(4), summarize)
    asked, retried = (str(request[-1]["content"]) for request in summarize.requests)
    assert f"Reply with exactly these {word} sections" in asked
    assert f"## {count}. {titles[-1]}" in asked and is_summary_request(asked)
    assert f"Write it again with all {word} sections" in retried


def test_the_floor_the_stand_ins_and_the_prompt_name_sections_that_exist() -> None:
    """`_with_floor` and the prompt's instructions name sections by title: renaming one in
    `SECTIONS` fails here instead of silently dropping the floor's part for it."""
    assert set(_summary._FLOOR_PARTS) <= set(SECTIONS)
    quoted = re.findall(r'"([A-Za-z ]+)" lists', _summary._INSTRUCTIONS)  # the prompt's words
    assert quoted and set(quoted) <= set(SECTIONS)
    assert {_summary._FIRST_REQUEST, _summary._LATEST_REQUEST} <= set(SECTIONS)
    messages = [*data_session()[:-2], {"role": "tool", "tool_call_id": "call-11",
                                       "content": "Result: mean dose_mg is 41.5"}]
    parts = render_floor_parts(extract_floor(messages), 4_000, focus="the dose")
    assert set(_summary._FLOOR_PARTS.values()) <= set(parts)  # each part the floor writes
