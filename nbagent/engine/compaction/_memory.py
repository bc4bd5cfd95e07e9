"""L2: a running session memory, updated incrementally.

The memory lives in the history itself, as append-only blocks after the preamble. Each
run folds only the rounds not yet folded in — the summarizer sees the previous memory
for context plus those rounds — and appends one block: the summarizer's notes plus the
floor of what it folded (the user's messages, names, error lines), so the cached prefix
stays byte-identical. Notes that are empty, an error or name nothing from the transcript
are rejected (retried once, then the block keeps the floor alone). When the memory
outgrows its budget the blocks after the first are merged into one, floors included.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._markers import is_notebook_state
from .._tokens import estimate_message_tokens
from ._common import (
    Layout,
    LevelResult,
    Message,
    Summarizer,
    add_costs,
    counts_for,
    prefix_sums,
    split_blocks,
)
from ._evidence import words
from ._floor import EMPTY, default_budget, extract_floor, kept_floor, kept_tokens
from ._fold_span import fold_span
from ._memory_blocks import (
    MEMORY_SYSTEM,
    NOT_CALLED,
    ask_notes,
    memory_block,
    merge_blocks,
)
from ._render import render_transcript

_UPDATE = """Here is the memory so far (for context only; do not repeat it):
<memory>
{memory}
</memory>

Write the notes to add for this new part of the conversation:
<conversation>
{transcript}
</conversation>"""
def session_memory_compact(
    messages: Sequence[Message],
    summarize: Summarizer | None,
    *,
    focus: str | None = None,
    tail_min_tokens: int = 10_000,
    tail_max_tokens: int = 40_000,
    tail_min_messages: int = 5,
    min_fold_tokens: int = 0,
    memory_max_tokens: int | None = None,
    max_input_tokens: int | None = None,
    floor_tokens_budget: int | None = None,
    counts: Sequence[int] | None = None,
    max_calls: int | None = None,
) -> LevelResult:
    """Fold the rounds before a verbatim recent tail into the session memory.

    Returns the history as preamble + memory blocks + notebook state + tail, or the
    input unchanged (`changed=False`, with the reason) when there is too little to fold
    in. Each new block holds the summarizer's notes and the floor of what it folds.

    Args:
        summarize: the model seam; None folds with the floor alone (no model call: for
            when the circuit breaker is open), and the result is marked `degraded`.
        floor_tokens_budget: the most all memory floors may take (see `floor_budget`);
            by default a share of the input's size.
        counts: one token count per message (e.g. `History`'s); computed once if None.
        max_calls: at most this many summarizer calls (None: a retry of unusable notes
            and a merge call when the memory outgrows its budget); past them the notes
            are not asked again and the blocks are merged by code.

    Notes rejected twice (empty, an error, naming nothing) leave the floor alone and
    mark the result `degraded`. Raises `CompactionFailed` when the summarizer raises.
    """
    counts = counts_for(messages, counts)
    sums = prefix_sums(counts)
    layout = Layout.of(messages)
    if len(layout.rounds) < 2:
        return LevelResult.unchanged(messages, "fewer than two rounds: nothing to fold in")
    fold_end = fold_span(messages, counts, tail_min_tokens=tail_min_tokens,
                         tail_max_tokens=tail_max_tokens, tail_min_messages=tail_min_messages,
                         max_input_tokens=max_input_tokens)[1]
    folded = messages[layout.blocks_end : fold_end]
    if not folded or sums[fold_end] - sums[layout.blocks_end] < min_fold_tokens:
        return LevelResult.unchanged(messages, "too little before the recent tail to fold in")

    region = range(layout.body, layout.blocks_end)
    blocks, states = split_blocks(messages[layout.body : layout.blocks_end])
    block_sizes = [counts[i] for i in region if not is_notebook_state(messages[i])]
    state_sizes = [counts[i] for i in region if is_notebook_state(messages[i])]
    known = sum((kept_floor(str(b["content"])) for b in blocks), EMPTY)
    spent = sum(kept_tokens(str(b["content"])) for b in blocks)
    budget = (floor_tokens_budget if floor_tokens_budget is not None
              else default_budget(sums[-1], spent))
    seen = extract_floor(folded, focus)
    new_floor = seen.without_known(known)
    new_budget = max(budget - spent, budget // 3)
    calls, cost, degraded = 0, None, summarize is None
    if summarize is None:
        block = memory_block(None, new_floor, new_budget, NOT_CALLED, keep_first=not blocks,
                       focus=focus)
        reason = f"folded {len(folded)} messages into the session memory (floor only)"
    else:
        memory = "\n\n".join(str(b["content"]) for b in blocks) or "(empty: the first part)"
        transcript = render_transcript(folded)
        if focus:
            transcript += f"\n\n(The user asks the memory to focus on: {focus})"
        request = [
            {"role": "system", "content": MEMORY_SYSTEM},
            {"role": "user", "content": _UPDATE.format(memory=memory, transcript=transcript)},
        ]
        reply, calls, cost, problems = ask_notes(summarize, request, seen, max_calls)
        degraded = reply is None
        block = memory_block(reply.text if reply else None, new_floor, new_budget,
                       keep_first=not blocks, focus=focus,
                       real={*known.names, *seen.names, *words(transcript, whole=True)})
        reason = f"folded {len(folded)} messages into the session memory"
        if reply is None:
            times = "twice" if calls > 1 else "(asked once)"
            reason += f"; the notes were not usable {times} ({'; '.join(problems)}): kept the floor"
    new_blocks = [*blocks, block]
    sizes = [*block_sizes, estimate_message_tokens(block)]
    if memory_max_tokens is not None and len(blocks) > 1 and sum(sizes) > (
            memory_max_tokens + budget):
        first_floor = kept_tokens(str(blocks[0]["content"]))
        calls_left = max_calls is None or calls < max_calls
        merged, more_calls, more_cost, how = merge_blocks(
            new_blocks[1:], summarize if calls_left else None,
            max(budget - first_floor, budget // 2), known + seen)
        calls, cost = calls + more_calls, add_costs(cost, more_cost)
        new_blocks = [blocks[0], merged]
        sizes = [sizes[0], estimate_message_tokens(merged)]
        reason += how
    before = sums[-1]
    after = sums[layout.body] + sum(sizes) + sum(state_sizes) + before - sums[fold_end]
    if after >= before:
        return LevelResult(messages, changed=False, summary_calls=calls, cost=cost,
                           reason="the memory is not smaller than what it would replace")
    result = [*messages[: layout.body], *new_blocks, *states, *messages[fold_end:]]
    return LevelResult(result, changed=True, reason=reason, summary_calls=calls, cost=cost,
                       summary=str(new_blocks[-1]["content"]), degraded=degraded)
