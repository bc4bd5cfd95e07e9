"""L4: the reactive fallback after a provider says the prompt is too long. One pass over
prefix sums of the per-message counts finds the cut; what goes leaves its floor. It takes
the numbers the agent read from the provider's text (`TokenLimits`): reading the text is
the agent's job (`nbagent.providers.parse_token_limits`), never the engine's.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import _figures as figures
from .._markers import MEMORY_HEADER, is_memory, is_notebook_state, is_summary
from .._tokens import estimate_message_tokens
from ._common import Layout, LevelResult, Message, counts_for, first_user_index, prefix_sums
from ._floor import Floor, default_budget, extract_floor
from ._floor_render import render_floor

TokenLimits = tuple[int | None, int | None]  # (the prompt's size, the model's limit)
DROPPED_NOTE = "(Older rounds were dropped to fit the model's limit; code kept this of them.)"
FLOOR_SHARE_OF_TARGET = 0.1  # the most the dropped rounds' floor may take of the target


def ptl_fallback(
    messages: Sequence[Message],
    limits: TokenLimits | None = None,
    drop_turns: int = 3,
    *,
    headroom: float = 0.9,
    keep_floor: bool = True,
    floor_tokens_budget: int | None = None,
    counts: Sequence[int] | None = None,
) -> LevelResult:
    """Drop the oldest whole rounds until the prompt fits `headroom` of the limit.

    `limits` gives the limit (and the actual size, which calibrates our estimate to the
    provider's count), as `(actual, limit)` read from the provider's error (either may be
    None); with no limit, the oldest `drop_turns` rounds go. Never dropped: the preamble,
    compaction blocks, the first user request, the newest round (with any pending turn).
    Whole rounds only, so no tool result is orphaned. With `keep_floor`, the dropped
    rounds' floor (user messages, names, error lines) becomes one memory block, when it
    fits. `counts` (one per message) are reused.

    While no block holds a floor yet, the first request is the first round's; it leads
    the new block's floor, whole, as the first block of the told-window path holds it
    (so L2 and L3 after this keep it whole and first, as they do there). Left in the
    history behind a block, it would be a later round's message to them: shortened by
    the next memory pass, and not the first of an L3 summary's user messages.
    """
    actual, limit = limits if limits is not None else (None, None)
    layout = Layout.of(messages)
    rounds = list(layout.rounds)
    if len(rounds) < 2:
        return LevelResult.unchanged(messages, "only one round: nothing old enough to drop")
    counts = counts_for(messages, counts)
    sums = prefix_sums(counts)
    estimate = sums[-1]
    held = any(is_memory(m) or is_summary(m) for m in messages[layout.body:layout.blocks_end])
    first = None if held else first_user_index(messages)  # a block holds it already
    cut_from = rounds[0]
    ends = rounds[1:]  # dropping n rounds cuts messages[cut_from:ends[n - 1]]
    ratio = actual / estimate if actual and estimate else 1.0
    target = headroom * limit / ratio if limit else None
    budget = floor_tokens_budget if floor_tokens_budget is not None else default_budget(estimate)
    if target is not None:
        budget = min(budget, int(target * FLOOR_SHARE_OF_TARGET))
    reserve = budget if keep_floor else 0

    def size(dropped: int) -> int:
        cut_to = ends[dropped - 1]
        kept_first = counts[first] if first is not None and cut_from <= first < cut_to else 0
        return estimate - (sums[cut_to] - sums[cut_from]) + kept_first

    if target is None or limit is None:  # (the one implies the other; typed apart)
        dropped = min(drop_turns, len(ends))
        how = f"no limit in the error: dropped the oldest {dropped} rounds"
    else:
        dropped = next((n for n in range(1, len(ends) + 1) if size(n) + reserve <= target),
                       len(ends))
        fits = size(dropped) + reserve <= target
        share = figures.percent(100 * headroom)
        how = (f"dropped the oldest {dropped} rounds to fit {share} of the "
               f"{figures.count(limit)}-token limit" if fits else
               f"dropped every old round ({dropped}); still over {share} of "
               f"{figures.count(limit)}")
    cut_to = ends[dropped - 1]
    keep_first = first is not None and cut_from <= first < cut_to
    first_cost = counts[first] if keep_first and first is not None else 0
    rest = size(dropped) - first_cost  # without the first request, wherever it goes
    block: list[Message] = []
    if keep_floor:
        gone = extract_floor(messages[cut_from:cut_to])
        candidates = [gone, Floor(gone.user_messages[:1], (), (), ())] if keep_first else [gone]
        for floor in candidates:
            text = render_floor(floor, budget + first_cost, keep_first=keep_first,
                                whole_first=keep_first)
            candidate = {"role": "user", "content": f"{MEMORY_HEADER}\n{DROPPED_NOTE}\n\n{text}"}
            cost = estimate_message_tokens(candidate)
            if text and (target is None or rest + cost <= target) and rest + cost < estimate:
                block = [candidate]
                how += ("; their floor kept in a memory block" if floor is gone else
                        "; the first request kept in a memory block")
                break
    at = next((i for i in range(layout.body, layout.blocks_end)
               if is_notebook_state(messages[i])), layout.blocks_end)  # memory before state
    result = [
        *messages[:at],
        *block,
        *messages[at:cut_from],
        *([messages[first]] if keep_first and not block and first is not None else []),
        *messages[cut_to:],
    ]
    return LevelResult(result, changed=True, reason=how)
