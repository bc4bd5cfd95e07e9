"""L4: the reactive fallback after a provider says the prompt is too long."""

from __future__ import annotations

from collections.abc import Sequence

from ._common import Layout, LevelResult, Message, first_user_index, tokens
from ._limits import parse_token_limits


def ptl_fallback(
    messages: Sequence[Message],
    error: BaseException | str | None = None,
    drop_turns: int = 3,
    *,
    headroom: float = 0.9,
) -> LevelResult:
    """Drop the oldest whole rounds until the prompt fits `headroom` of the limit.

    The limit (and the actual size, which calibrates our estimate to the
    provider's count) are parsed from `error`; with no limit in it, the oldest
    `drop_turns` rounds go. Never dropped: the system prompt, compaction
    blocks, the first user request, the newest round (with any pending turn).
    Whole rounds only, so no tool result is orphaned.
    """
    text = str(error) if error is not None else ""
    actual, limit = parse_token_limits(text)
    layout = Layout.of(messages)
    rounds = list(layout.rounds)
    if len(rounds) < 2:
        return LevelResult.unchanged(messages, "only one round: nothing old enough to drop")
    first = first_user_index(messages)
    droppable = rounds[:-1]  # the newest round stays
    ends = [*rounds[1:]]
    estimate = tokens(messages)
    ratio = actual / estimate if actual and estimate else 1.0
    target = headroom * limit / ratio if limit else None

    def rebuild(dropped: int) -> list[Message]:
        cut_from, cut_to = droppable[0], ends[dropped - 1]
        keep_first = [messages[first]] if first is not None and cut_from <= first < cut_to else []
        return [*messages[:cut_from], *keep_first, *messages[cut_to:]]

    if target is None:
        dropped = min(drop_turns, len(droppable))
        result = rebuild(dropped)
        how = f"no limit in the error: dropped the oldest {dropped} rounds"
    else:
        for dropped in range(1, len(droppable) + 1):
            result = rebuild(dropped)
            if tokens(result) <= target:
                break
        how = (
            f"dropped the oldest {dropped} rounds to fit 90% of the {limit:,}-token limit"
            if tokens(result) <= target
            else f"dropped every old round ({dropped}); still over 90% of {limit:,}"
        )
    return LevelResult(result, changed=True, reason=how)
