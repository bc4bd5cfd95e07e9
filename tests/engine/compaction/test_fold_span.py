"""Where L2 folds (`fold_span`): its verbatim tail starts at a round start and holds at
least the tokens and messages asked (within its most); a summarizer's input window ends
the fold earlier, the smaller the earlier; fewer than two rounds fold nothing. The memory
level folds exactly this span."""

from __future__ import annotations

from typing import Any

from nbagent.compaction import session_memory_compact
from nbagent.engine import estimate_message_tokens, is_plain_user
from nbagent.engine.compaction._fold_span import fold_span
from nbagent.testing import ScriptedSummarizer
from tests.helpers import session

TAIL: dict[str, Any] = {"tail_min_tokens": 1_500, "tail_max_tokens": 3_000, "tail_min_messages": 4}


def counts(messages: list[dict[str, object]]) -> list[int]:
    return [estimate_message_tokens(m) for m in messages]


def test_the_tail_starts_at_a_round_and_holds_what_was_asked() -> None:
    messages = session(10)
    start, end = fold_span(messages, counts(messages), **TAIL)
    assert start == 1 and start < end < len(messages)  # after the system prompt
    assert is_plain_user(messages[end])  # a round start: no tool call cut from its result
    sizes = counts(messages)
    tail = sum(sizes[end:])
    assert 1_500 <= tail <= 3_000
    texts = [m for m in messages[end:] if m["role"] in ("user", "assistant") and m["content"]]
    previous = max(i for i in range(end) if is_plain_user(messages[i]))
    # as many messages as asked, unless one more round would pass the tail's most
    assert len(texts) >= 4 or tail + sum(sizes[previous:end]) > 3_000


def test_a_small_summarizer_window_folds_fewer_rounds() -> None:
    messages = session(30)
    _, wide = fold_span(messages, counts(messages), **TAIL)
    _, narrow = fold_span(messages, counts(messages), max_input_tokens=2_000, **TAIL)
    _, wider = fold_span(messages, counts(messages), max_input_tokens=8_000, **TAIL)
    assert 1 < narrow < wider <= wide and is_plain_user(messages[narrow])


def test_fewer_than_two_rounds_fold_nothing() -> None:
    messages = session(1)
    start, end = fold_span(messages, counts(messages), **TAIL)
    assert start == end


def test_the_memory_level_folds_exactly_that_span() -> None:
    messages = session(10)
    _, end = fold_span(messages, counts(messages), **TAIL)
    folded = session_memory_compact(messages, ScriptedSummarizer(["- notes on sales_df"]),
                                    **TAIL)
    assert list(folded[2:]) == messages[end:]  # system prompt, one block, then the tail
