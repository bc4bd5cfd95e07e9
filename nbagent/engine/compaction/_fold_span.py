"""Where L2 folds: the verbatim recent tail's start (a round start, walking back until the
tail holds enough tokens and messages, within its most) and, with a summarizer's input
window, the last round it can still read. `fold_span` answers for the level and for its
plan line alike, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._markers import is_note
from .._tokens import estimate_tokens
from ._common import Layout, Message, prefix_sums
from ._render import RESULT_CHARS, render_message


def _tail_start(
    messages: Sequence[Message],
    rounds: Sequence[int],
    sums: Sequence[int],
    min_tokens: int,
    max_tokens: int,
    min_messages: int,
) -> int:
    """Where the verbatim tail begins: a round start, walking back from the newest round."""

    def texts(start: int, stop: int) -> int:
        return sum(1 for m in messages[start:stop]
                   if m["role"] in ("user", "assistant") and m.get("content") and not is_note(m))

    start = rounds[-1]
    size, count = sums[-1] - sums[start], texts(start, len(messages))
    for candidate in reversed(rounds[:-1]):
        if size >= min_tokens and count >= min_messages:
            break
        grown = sums[start] - sums[candidate]
        if size + grown > max_tokens:
            break
        count += texts(candidate, start)
        size, start = size + grown, candidate
    return start


def _fold_end(
    messages: Sequence[Message], counts: Sequence[int], layout: Layout, split: int, budget: int
) -> int:
    """The last round start up to which the summarizer can read the transcript."""
    candidates = [r for r in layout.rounds if r <= split][1:] or [split]
    fold_end, size, start = candidates[0], 0, layout.blocks_end
    for end in candidates:
        for index in range(start, end):  # each message's rendered size, once
            message = messages[index]
            long_result = (message["role"] == "tool"
                           and len(str(message.get("content") or "")) > RESULT_CHARS)
            size += estimate_tokens(render_message(message)) if long_result else counts[index]
        start = end
        if size > budget:
            break
        fold_end = end
    return fold_end


def fold_span(
    messages: Sequence[Message],
    counts: Sequence[int],
    *,
    tail_min_tokens: int,
    tail_max_tokens: int,
    tail_min_messages: int,
    max_input_tokens: int | None = None,
) -> tuple[int, int]:
    """The messages [start, end) the memory level would fold (start == end: none)."""
    layout = Layout.of(messages)
    if len(layout.rounds) < 2:
        return layout.blocks_end, layout.blocks_end
    sums = prefix_sums(counts)
    split = _tail_start(messages, layout.rounds, sums, tail_min_tokens, tail_max_tokens,
                        tail_min_messages)
    if max_input_tokens is not None:  # fold only as many old rounds as the summarizer can read
        split = _fold_end(messages, counts, layout, split, int(max_input_tokens * 0.6))
    return layout.blocks_end, max(layout.blocks_end, split)
