"""The last resort of an automatic compaction still over its trigger (`make_room`): before a
message is refused, the floor folds everything but the latest round; if that is still too
much, everything before the latest round — earlier memory blocks and summaries included —
becomes one block of its floor, sized to the room left beside that round (L4's way: the
oldest text goes, its floor stays). Only the system prompt, the pins, the notebook state
and the latest round are never touched; when they alone do not fit, nothing here can help
and the agent says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._markers import MEMORY_HEADER, is_notebook_state
from .._tokens import estimate_message_tokens
from ._common import Layout, LevelResult, Message, counts_for
from ._floor import MIN_FLOOR_TOKENS, extract_floor
from ._floor_render import render_floor
from ._memory import session_memory_compact

ROOM_NOTE = ("(Older rounds were folded to make room for the latest message; code kept this "
             "of them, recall finds the rest.)")
_BLOCK_FRAME = 40  # tokens: what the block's floor may lack beside its header and note


def make_room(
    messages: Sequence[Message],
    *,
    room: int | None,
    focus: str | None = None,
    floor_tokens_budget: int | None = None,
    counts: Sequence[int] | None = None,
) -> LevelResult:
    """Fit `messages` into `room` tokens (in `counts`' units) by folding all but the latest
    round: first the floor with only that round verbatim (earlier blocks kept, at most
    `floor_tokens_budget` for its floor); then, if still over, one block of the floor of
    everything before that round, within what is left. Unchanged when they fit already or
    there is no `room` (a compaction the user asked for runs no last resort).
    """
    counts = counts_for(messages, counts)
    if room is None:
        return LevelResult.unchanged(messages, "no room to fit (not an automatic compaction)")
    if sum(counts) <= room:
        return LevelResult.unchanged(messages, "it fits under the trigger")
    layout = Layout.of(messages)
    if not layout.rounds or layout.rounds[-1] <= layout.body:
        return LevelResult(messages, changed=False, exhausted=True,
                           reason="only the latest round: nothing older to fold")
    left = _left(messages, counts, room)
    budget = max(MIN_FLOOR_TOKENS // 2, min(floor_tokens_budget or left, left - _BLOCK_FRAME))
    tight = LevelResult.unchanged(messages, "one round")
    if len(layout.rounds) > 1:  # the floor alone (no model call: this is the last resort)
        tight = session_memory_compact(
            messages, None, focus=focus, tail_min_tokens=0, tail_max_tokens=0,
            tail_min_messages=1, min_fold_tokens=0, floor_tokens_budget=budget, counts=counts)
    work = list(tight) if tight.changed else list(messages)
    work_counts = counts_for(work, None if tight.changed else counts)
    folded = LevelResult(work, changed=True, reason=f"only the latest round verbatim: "
                         f"{tight.reason}")
    if tight.changed and sum(work_counts) <= room:
        return folded
    result = _one_block(work, work_counts, room, focus)
    if result is not None:
        return result
    folded.exhausted = True
    return folded if tight.changed else LevelResult(
        messages, changed=False, exhausted=True,
        reason="nothing before the latest round left to fold")


def _block(text: str) -> Message:
    """The block the folded part becomes: its header, what happened, and its floor."""
    return {"role": "user", "content": "\n".join(filter(None, [MEMORY_HEADER, ROOM_NOTE,
                                                              text and f"\n{text}"]))}


def _left(messages: Sequence[Message], counts: Sequence[int], room: int) -> int:
    """What `room` leaves for the folded part: less the preamble, the notebook state and
    the latest round, which stay."""
    layout = Layout.of(messages)
    kept = sum(counts[:layout.body]) + sum(counts[layout.rounds[-1]:]) + sum(
        counts[i] for i in range(layout.body, layout.blocks_end)
        if is_notebook_state(messages[i]))
    return room - kept


def _one_block(messages: list[Message], counts: Sequence[int], room: int,
               focus: str | None) -> LevelResult | None:
    """Everything between the preamble and the latest round as one block of its floor,
    sized to what `room` leaves (None: nothing there to fold)."""
    layout = Layout.of(messages)
    latest = layout.rounds[-1]
    states = [m for m in messages[layout.body:layout.blocks_end] if is_notebook_state(m)]
    folded = [m for m in messages[layout.body:latest] if not is_notebook_state(m)]
    if not folded:
        return None
    floor = extract_floor(folded)
    left = _left(messages, counts, room) - estimate_message_tokens(_block(""))
    block = _block("")
    for _ in range(3):  # the render keeps to about its budget: shrink by what it went over
        text = render_floor(floor, left, keep_first=True, focus=focus) if left > 0 else ""
        block = _block(text)
        over = estimate_message_tokens(block) - (left + estimate_message_tokens(_block("")))
        if over <= 0 or left <= 0:
            break
        left -= over + _BLOCK_FRAME // 4
    result = [*messages[:layout.body], block, *states, *messages[latest:]]
    before = sum(counts)
    after = before - sum(counts[layout.body:latest]) + sum(
        counts[i] for i in range(layout.body, layout.blocks_end)
        if is_notebook_state(messages[i])) + estimate_message_tokens(block)
    if after >= before:
        return None
    return LevelResult(result, changed=True, exhausted=after > room, reason=(
        f"only the latest round verbatim; the {len(folded)} message"
        f"{'' if len(folded) == 1 else 's'} before it folded into one block of their floor "
        f"({'fits' if after <= room else 'still over'} the room)"))
