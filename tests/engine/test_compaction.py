"""The levels on their own: pure functions from a message list to a new one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nbagent import CompactionFailed, validate_messages
from nbagent.compaction import (
    SECTIONS,
    context_collapse,
    full_compact,
    parse_sections,
    ptl_fallback,
    session_memory_compact,
    snip_old_tools,
    validate_summary,
)
from nbagent.engine import (
    MEMORY_HEADER,
    SUMMARY_HEADER,
    is_memory,
    is_plain_user,
    is_snipped,
    snip_placeholder,
)
from nbagent.providers import parse_token_limits
from nbagent.testing import ScriptedSummarizer, parse_floor
from tests.helpers import SYSTEM, nine_sections, session, tokens, tool_round

# -- L1 ----------------------------------------------------------------------------------


def results(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_snip_clears_results_older_than_the_kept_rounds_and_keeps_calls() -> None:
    messages = session(12)
    before = copy.deepcopy(messages)
    snipped = snip_old_tools(messages, keep_recent_turns=10)
    assert snipped.changed and messages == before  # input untouched
    assert results(snipped)[0].startswith(snip_placeholder("call-0"))
    assert results(snipped)[1].startswith(snip_placeholder("call-1"))
    assert 'recall(query="call-0")' in results(snipped)[0]
    assert "Names: col_0" in results(snipped)[0]  # the digest of what it held
    assert results(snipped)[2:] == results(messages)[2:]
    assert [m.get("tool_calls") for m in snipped] == [m.get("tool_calls") for m in messages]
    validate_messages(snipped)


def test_snip_stops_at_the_target_oldest_first() -> None:
    messages = session(12)
    one_result = tokens(messages) - tokens(snip_old_tools(messages, keep_recent_turns=11))
    target = tokens(messages) - one_result - 10
    snipped = snip_old_tools(messages, keep_recent_turns=0, target_tokens=target)
    assert all(map(is_snipped, results(snipped)[:2]))
    assert results(snipped)[2:] == results(messages)[2:]


def test_snip_skips_a_batch_too_small_to_pay_for_the_cache_rewrite() -> None:
    messages = session(12)
    snipped = snip_old_tools(messages, keep_recent_turns=10, min_free_tokens=1_000_000)
    assert not snipped.changed and list(snipped) == messages
    assert "batch minimum" in snipped.reason


def test_snip_leaves_short_results_alone_and_is_idempotent() -> None:
    messages = session(3) + tool_round(3, result="ok")
    once = snip_old_tools(messages, keep_recent_turns=0)
    assert results(once)[-1] == "ok"
    twice = snip_old_tools(once, keep_recent_turns=0)
    assert not twice.changed and list(twice) == list(once)


# -- L5 ----------------------------------------------------------------------------------


def test_collapse_cuts_large_results_with_a_count_and_is_idempotent() -> None:
    messages = session(2)
    collapsed = context_collapse(messages, max_chars=50)
    cut = results(collapsed)[0]
    removed = len(results(messages)[0]) - 50
    assert (
        cut.startswith(results(messages)[0][:50])
        and f"[... {removed:,} characters removed ...]" in cut
    )
    assert list(context_collapse(collapsed, max_chars=50)) == list(collapsed)
    assert not context_collapse(collapsed, max_chars=50).changed


# -- L4 ----------------------------------------------------------------------------------

PTL_ERRORS = [
    ("prompt is too long: 213462 tokens > 200000 maximum", 213_462, 200_000),
    (
        "This model's maximum context length is 4096 tokens. However, you requested 5048 tokens "
        "(4048 in the messages, 1000 in the completion). Please reduce the length of the messages.",
        5_048,
        4_096,
    ),
    (
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        1_200_000,
        1_048_576,
    ),
    (
        "This model's maximum prompt length is 131072 but the request contains 150123 tokens.",
        150_123,
        131_072,
    ),
    (
        "This endpoint's maximum context length is 163840 tokens. However, you requested about 201734 tokens "
        "(193542 of text input, 8192 in the output).",
        201_734,
        163_840,
    ),
    ("prompt token count of 139521 exceeds the limit of 128000", 139_521, 128_000),
    (
        "This model's maximum context length is 2048 tokens. However, you requested 3051 tokens "
        "(2851 in the messages, 200 in the completion). Please reduce the length of the messages or completion.",
        3_051,
        2_048,
    ),
    (
        "request (8231 tokens) exceeds the available context size (8192 tokens), try increasing it",
        8_231,
        8_192,
    ),
    (
        "Trying to keep the first 5233 tokens when context the overflows. However, the model is loaded "
        "with context length of only 4096 tokens, which is not enough.",
        5_233,
        4_096,
    ),
    (
        "The decoder prompt (length 33000) is longer than the maximum model length of 32768.",
        33_000,
        32_768,
    ),
    (
        "Prompt contains 40321 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        40_321,
        32_768,
    ),
    (
        "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 5235.",
        5_235,
        4_081,
    ),
    ("Invalid request: Your request exceeded model token limit: 131072", None, 131_072),
    (
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("text", "actual", "limit"),
    PTL_ERRORS,
    ids=[
        "anthropic",
        "openai",
        "gemini",
        "xai",
        "openrouter",
        "copilot",
        "llama-cpp-python",
        "llama.cpp-server",
        "lm-studio",
        "vllm",
        "mistral",
        "cohere",
        "kimi",
        "openai-responses",
    ],
)
def test_parse_token_limits_reads_actual_and_limit(
    text: str, actual: int | None, limit: int | None
) -> None:
    from nbagent.providers import parse_token_limits

    assert parse_token_limits(text) == (actual, limit)


def test_ptl_drops_the_oldest_rounds_until_under_ninety_percent_of_the_limit() -> None:
    messages = session(10)
    size = tokens(messages)
    limit = size // 2
    dropped = ptl_fallback(messages, parse_token_limits(f"prompt is too long: {size} tokens > {limit} maximum"))
    assert dropped.changed and tokens(dropped) <= 0.9 * limit
    assert dropped[0] == SYSTEM and is_memory(dropped[1])
    kept = parse_floor(dropped[1]["content"]).user_messages  # the first request leads, whole
    assert kept[0] == messages[1]["content"] and kept[1].startswith("question 1: describe")
    assert not any(m == messages[1] for m in dropped[2:])  # once, in the block
    assert dropped[-4:] == messages[-4:]  # the newest round stays
    validate_messages(dropped)
    fewer = ptl_fallback(
        messages, parse_token_limits(
            f"prompt is too long: {size} tokens > {limit + limit // 2} maximum")
    )
    assert len(fewer) > len(dropped)  # it stops as soon as it fits


def test_ptl_uses_the_providers_count_to_calibrate() -> None:
    messages = session(10)
    limit = tokens(messages)  # we think it fits; the provider counted twice as many
    dropped = ptl_fallback(messages, parse_token_limits(f"prompt is too long: {2 * limit} tokens > {limit} maximum"))
    assert tokens(dropped) <= 0.9 * limit / 2


def test_ptl_without_a_limit_drops_three_rounds() -> None:
    messages = session(6)
    dropped = ptl_fallback(messages, parse_token_limits("Input is too long for requested model."))
    asks = [m["content"] for m in dropped if is_plain_user(m)]
    assert parse_floor(dropped[1]["content"]).user_messages[0] == messages[1]["content"]
    assert [a.split(":")[0] for a in asks] == ["question 3", "question 4", "question 5"]
    assert "no limit" in dropped.reason


def test_ptl_with_one_round_cannot_drop_anything() -> None:
    messages = session(1)
    assert not ptl_fallback(messages, parse_token_limits("prompt is too long: 9 tokens > 5 maximum")).changed


# -- L3 ----------------------------------------------------------------------------------


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


# -- L2 ----------------------------------------------------------------------------------

MEMORY_KNOBS = {"tail_min_tokens": 1_500, "tail_max_tokens": 3_000, "tail_min_messages": 4}


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


def grown_memory(summarize: ScriptedSummarizer) -> list[dict[str, Any]]:
    """Three folds: three memory blocks, then six more rounds to fold."""
    messages = session(10)
    for t in range(10, 22, 6):
        messages = list(session_memory_compact(messages, summarize, **MEMORY_KNOBS))
        messages += [m for u in range(t, t + 6) for m in tool_round(u)]
    return messages


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


def test_sections_parse_from_common_heading_styles() -> None:
    text = "\n".join(f"**{n}. {title}:**\nbody {n}" for n, title in enumerate(SECTIONS, 1))
    assert list(parse_sections(text)) == list(SECTIONS) and not validate_summary(text)
