"""L2 (`session_memory_compact`): old rounds folded into append-only memory blocks before a
verbatim tail, each run sending only the new rounds; past its budget the later blocks
merge, floors included (by code when the merge call fails)."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import CompactionFailed, validate_messages
from nbagent.compaction import (
    full_compact,
    session_memory_compact,
)
from nbagent.engine import (
    MEMORY_HEADER,
    is_memory,
)
from nbagent.testing import ScriptedSummarizer, kept_floor, parse_floor
from tests.engine.compaction.sessions import (
    FLOOR_NAMES,
    KNOBS,
    data_session,
)
from tests.helpers import SYSTEM, nine_sections, session, tokens, tool_round

MEMORY_KNOBS = {"tail_min_tokens": 1_500, "tail_max_tokens": 3_000, "tail_min_messages": 4}


def grown_memory(summarize: ScriptedSummarizer) -> list[dict[str, Any]]:
    """Three folds: three memory blocks, then six more rounds to fold."""
    messages = session(10)
    for t in range(10, 22, 6):
        messages = list(session_memory_compact(messages, summarize, **MEMORY_KNOBS))
        messages += [m for u in range(t, t + 6) for m in tool_round(u)]
    return messages


def test_session_memory_folds_old_rounds_and_keeps_a_verbatim_tail() -> None:
    messages = session(10)
    summarize = ScriptedSummarizer(["- user explores sales_df column by column"])
    folded = session_memory_compact(messages, summarize, **MEMORY_KNOBS)
    assert folded.changed and folded[0] == SYSTEM
    assert folded[1]["content"].startswith(MEMORY_HEADER)
    assert "Load data/sales.csv into sales_df" in folded[1]["content"]
    tail = folded[2:]
    assert tail == messages[len(messages) - len(tail) :] and tail[0]["role"] == "user"
    assert tokens(tail) >= 1_500 and tokens(folded) < tokens(messages)
    validate_messages(folded)


def test_the_prompts_wrapper_tags_echoed_around_the_notes_stay_out_of_the_block() -> None:
    summarize = ScriptedSummarizer(["<memory>\n- user explores sales_df by column\n</memory>"])
    folded = session_memory_compact(session(10), summarize, **MEMORY_KNOBS)
    block = folded[1]["content"]
    assert "- user explores sales_df by column" in block
    assert "<memory>" not in block and "</memory>" not in block


def test_the_second_run_sends_only_the_new_rounds_and_appends_a_block() -> None:
    summarize = ScriptedSummarizer(["- first notes on sales_df", "- second notes on col_12"])
    first = session_memory_compact(session(10), summarize, **MEMORY_KNOBS)
    grown = list(first) + [m for t in range(10, 16) for m in tool_round(t)]
    second = session_memory_compact(grown, summarize, **MEMORY_KNOBS)
    prompt = summarize.last_prompt()
    assert "- first notes on sales_df" in prompt  # the previous memory, for context
    folded_before = {m["content"] for m in session(10) if m["role"] == "user"} - {
        m["content"] for m in first if m["role"] == "user"
    }
    assert folded_before and not any(q in prompt.split("<conversation>")[1] for q in folded_before)
    assert second[1] == first[1]  # the first block is byte-identical: the cached prefix holds
    assert (
        second[2]["content"].startswith(MEMORY_HEADER)
        and "- second notes on col_12" in second[2]["content"]
    )


def test_memory_past_its_budget_merges_the_later_blocks_and_their_floors() -> None:
    notes = [f"- sales_df {x} " * 50 for x in "abc"]
    summarize = ScriptedSummarizer([*notes, "- merged notes on sales_df"])
    messages = grown_memory(summarize)
    asked = [m["content"] for m in messages if is_memory(m)]
    merged = session_memory_compact(
        messages, summarize, memory_max_tokens=200, floor_tokens_budget=400, **MEMORY_KNOBS
    )
    blocks = [m["content"] for m in merged if is_memory(m)]
    assert len(blocks) == 2 and blocks[0] == asked[0] and "- merged notes" in blocks[1]
    for question in ("question 9:", "question 14:", "question 17:"):  # every later block's
        assert question in blocks[1]  # user messages survive the merge
    assert "col_12" in blocks[1] and "Names:" in blocks[1]
    summarize.assert_consumed()


def test_a_name_only_the_old_notes_showed_is_listed_again_when_the_merge_drops_it() -> None:
    notes = ["- sales_df first", "- col_12 and col_13 looked skewed", "- sales_df c " * 50]
    summarize = ScriptedSummarizer([*notes, "- merged notes on sales_df"])
    messages = grown_memory(summarize)
    second = [m["content"] for m in messages if is_memory(m)][1]
    assert "col_12" in second and "col_12" not in parse_floor(second).names  # shown once
    merged = session_memory_compact(
        messages, summarize, memory_max_tokens=100, floor_tokens_budget=400, **MEMORY_KNOBS
    )
    block = [m["content"] for m in merged if is_memory(m)][1]
    assert "- merged notes on sales_df" in block and "col_13" not in block.split("\n\n")[0]
    assert {"col_12", "col_13"} <= set(parse_floor(block).names)  # listed again
    summarize.assert_consumed()


def test_a_failed_merge_merges_by_code_and_keeps_the_floors() -> None:
    notes = [f"- sales_df {x} " * 50 for x in "abc"]
    summarize = ScriptedSummarizer([*notes, "", "Error: overloaded"])
    messages = grown_memory(summarize)
    folded = session_memory_compact(
        messages, summarize, memory_max_tokens=100, floor_tokens_budget=400, **MEMORY_KNOBS
    )
    assert folded.changed and "merged the later memory blocks by code" in folded.reason
    blocks = [m["content"] for m in folded if is_memory(m)]
    assert len(blocks) == 2 and "- sales_df b" in blocks[1] and "- sales_df c" in blocks[1]
    assert "question 12:" in blocks[1] and "question 17:" in blocks[1]
    summarize.assert_consumed()


def test_session_memory_cannot_run_on_too_little() -> None:
    summarize = ScriptedSummarizer()
    result = session_memory_compact(session(1), summarize, **MEMORY_KNOBS)
    assert not result.changed and "nothing to fold" in result.reason and summarize.calls == 0


def test_tool_io_reaches_the_memory_summarizer_in_compact_form() -> None:
    summarize = ScriptedSummarizer(["- notes on sales_df"])
    session_memory_compact(session(10), summarize, **MEMORY_KNOBS)
    prompt = summarize.last_prompt()
    assert '[assistant calls describe (call-0)] {"name": "sales_df"}' in prompt
    assert "[tool result call-0]" in prompt and "characters omitted" in prompt


def test_the_summarizer_failing_twice_raises_with_the_calls_spent() -> None:
    summarize = ScriptedSummarizer([RuntimeError("boom"), RuntimeError("boom")])
    with pytest.raises(CompactionFailed, match="RuntimeError: boom"):
        session_memory_compact(session(10), summarize, **MEMORY_KNOBS)


def test_a_memory_block_carries_the_floor_of_what_it_folds() -> None:
    summarize = ScriptedSummarizer(["- explored visits and fixed the dose column"])
    folded = session_memory_compact(data_session(), summarize, **KNOBS)
    block = folded[1]["content"]
    assert is_memory(folded[1]) and not folded.degraded
    assert FLOOR_NAMES <= set(parse_floor(block).names)
    assert "KeyError: 'dosage_mg'" in block
    assert "- Use dose_mg. From now on exclude the pilot clinic." in block  # verbatim


def test_names_the_notes_show_are_not_listed_again_and_are_read_back() -> None:
    shown = {"data/trial/visits.csv", "account_ref", "dosage_mg"}
    summarize = ScriptedSummarizer(["- loaded `data/trial/visits.csv` (key account_ref); "
                                    "dosage_mg raised a KeyError, so use the dose column."])
    messages = list(session_memory_compact(data_session(), summarize, **KNOBS))
    block = messages[1]["content"]
    listed = set(parse_floor(block).names)
    assert shown.isdisjoint(listed)  # the notes show them: not printed twice
    assert {"plan_tier", "visits"} <= listed  # not in the notes: still listed
    assert FLOOR_NAMES <= set(kept_floor(block).names)  # read back from the notes
    assert "- Use dose_mg. From now on exclude the pilot clinic." in block  # users stay whole
    messages += tool_round(20)  # a later summary that says none of them still keeps them
    summary = full_compact(messages, ScriptedSummarizer([nine_sections("Bland")]))[1]["content"]
    assert FLOOR_NAMES <= set(parse_floor(summary).names)


@pytest.mark.parametrize("reply", ["Sure! We had a productive conversation.",
                                   nine_sections("Bland")], ids=["garbage", "bland"])
def test_weak_notes_are_retried_once_then_the_floor_stands_alone(reply: str) -> None:
    summarize = ScriptedSummarizer([reply, reply])
    folded = session_memory_compact(data_session(), summarize, **KNOBS)
    assert folded.changed and folded.degraded and folded.summary_calls == 2
    assert "name nothing" in summarize.last_prompt()  # the retry says what was wrong
    block = folded[1]["content"]
    assert reply not in block and "No notes" in block and FLOOR_NAMES <= set(parse_floor(block).names)


def test_with_no_summarizer_the_memory_is_the_floor_and_no_model_is_called() -> None:
    folded = session_memory_compact(data_session(), None, **KNOBS)
    assert folded.changed and folded.degraded and folded.summary_calls == 0
    assert "Load data/trial/visits.csv please." in folded[1]["content"]


def test_a_raising_summarizer_still_raises_so_the_controller_can_fall_back() -> None:
    with pytest.raises(CompactionFailed):
        session_memory_compact(data_session(), ScriptedSummarizer([RuntimeError("down")]), **KNOBS)
