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

import re
from collections.abc import Collection, Sequence

from .._exceptions import CompactionFailed
from .._markers import MEMORY_HEADER, is_note, is_notebook_state
from .._tokens import estimate_message_tokens, estimate_tokens
from ._common import (
    Layout,
    LevelResult,
    Message,
    Summarizer,
    SummaryReply,
    add_costs,
    ask_within,
    counts_for,
    looks_like_error,
    prefix_sums,
    split_blocks,
)
from ._evidence import notes_only_line, words
from ._floor import (
    EMPTY,
    Floor,
    default_budget,
    extract_floor,
    kept_floor,
    kept_tokens,
    names_shown,
    notes_end,
    render_floor,
)
from ._render import RESULT_CHARS, render_message, render_transcript

MEMORY_SYSTEM = (
    "You keep the working memory of a long conversation between a data scientist and an AI "
    "assistant in a Jupyter notebook. Write terse notes the assistant can continue from: "
    "goals, decisions, exact names (files, variables, columns), results, errors and their "
    "fixes, open tasks."
)
_UPDATE = """Here is the memory so far (for context only; do not repeat it):
<memory>
{memory}
</memory>

Write the notes to add for this new part of the conversation:
<conversation>
{transcript}
</conversation>"""
_MERGE = """Merge these memory notes into one shorter memory that keeps every goal, decision, \
exact name, result and open task:
<memory>
{memory}
</memory>"""
_RETRY = ("That reply is not usable: {problems}. Write the notes again: the goals, decisions, "
          "results and open tasks, naming the exact files, variables and columns.")
FLOOR_ONLY = "(No notes: {why}. What follows was kept by code, verbatim.)"
_NOT_CALLED = "the summarizer was not called"
_NOT_USABLE = "the summarizer's notes were not usable"
_WORD = re.compile(r"[A-Za-z][A-Za-z_]{5,}")
# the prompt's own wrappers, on a line of their own: a small model echoes them around its
# notes, and a chat model that reads them in the block echoes them into its replies
_WRAPPER_LINE = re.compile(r"^[ \t]*</?(?:memory|conversation)>[ \t]*$\n?", re.MULTILINE)


def validate_notes(text: str, floor: Floor) -> list[str]:
    """Problems with a summarizer's notes; an empty list means they are usable.

    Usable notes are not empty, not an error message, and name something from the
    transcript they fold: one of its names, or (when it has none) a word the user wrote.
    """
    if not text.strip():
        return ["the reply is empty"]
    if looks_like_error(text):
        return ["the reply is an error message, not notes"]
    lowered = text.lower()
    anchors = [n.lower() for n in floor.names]
    if not anchors:
        anchors = [w.lower() for t in floor.user_messages for w in _WORD.findall(t)]
    if anchors and not any(_mentions(lowered, anchor) for anchor in anchors):
        return ["the notes name nothing from the conversation (no file, variable or column)"]
    return []


def _mentions(text: str, name: str) -> bool:
    if len(name) >= 4:
        return name in text
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text) is not None


def _block(notes: str | None, floor: Floor, budget: int, why: str = _NOT_USABLE, *,
           keep_first: bool = False, focus: str | None = None,
           real: Collection[str] = ()) -> Message:
    """A memory block: the notes, then the floor (less the names the notes show). Names
    the notes show that are neither in `floor` nor `real` (what the summarizer read) are
    listed as the notes' own, so reading the block back (`kept_floor`) does not take a
    name the summarizer made up for one the conversation had."""
    body = _WRAPPER_LINE.sub("", notes).strip() if notes is not None else FLOOR_ONLY.format(
        why=why)
    text = render_floor(floor, budget, keep_first=keep_first, focus=focus,
                        shown=body if notes is not None else "")
    if notes is not None:
        known = {*floor.names, *real}
        text = "\n".join(filter(None, [text, notes_only_line(names_shown(body), known)]))
    return {"role": "user", "content": f"{MEMORY_HEADER}\n{body}\n\n{text}".rstrip()}


def _notes(block: Message) -> str | None:
    """The summarizer's notes in a memory block (None when it kept the floor alone)."""
    text = str(block["content"])[len(MEMORY_HEADER):]
    notes = text[:notes_end(text)].strip()
    return None if not notes or notes.startswith("(No notes:") else notes


def _ask(
    summarize: Summarizer, request: list[Message], floor: Floor, max_calls: int | None = None
) -> tuple[SummaryReply | None, int, float | None, list[str]]:
    """One call, retried once (within `max_calls`) if the notes are not usable;
    (None, ...) if none were."""
    reply, calls, cost, problems = ask_within(
        summarize, request, lambda text: validate_notes(text, floor), _RETRY, max_calls)
    return (None if problems else reply), calls, cost, problems


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
    seen = extract_floor(folded)
    new_floor = seen.without_known(known)
    new_budget = max(budget - spent, budget // 3)
    calls, cost, degraded = 0, None, summarize is None
    if summarize is None:
        block = _block(None, new_floor, new_budget, _NOT_CALLED, keep_first=not blocks,
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
        reply, calls, cost, problems = _ask(summarize, request, seen, max_calls)
        degraded = reply is None
        block = _block(reply.text if reply else None, new_floor, new_budget,
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
        merged, more_calls, more_cost, how = _merge(
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


def _merge(
    blocks: Sequence[Message], summarize: Summarizer | None, floor_budget: int, seen: Floor
) -> tuple[Message, int, float | None, str]:
    """One block from several: the notes merged by the summarizer (or, when it fails, by
    code: joined and cut), the floors merged by code under `floor_budget` (with the
    names the old notes showed, which their floors did not print). The merged notes must
    name something `seen` holds."""
    floor = sum((kept_floor(str(b["content"])) for b in blocks), EMPTY)
    budget = max(floor_budget, 1)

    def block(notes: str | None) -> Message:
        return _block(notes, floor, budget, real=seen.names)

    notes = [n for n in map(_notes, blocks) if n is not None]
    if not notes:
        how = ", then merged the later memory blocks' floors"
        return block(None), 0, None, how
    if len(notes) == 1 or summarize is None:
        how = ", then merged the later memory blocks"
        return block(_joined(notes)), 0, None, how
    request = [{"role": "system", "content": MEMORY_SYSTEM},
               {"role": "user", "content": _MERGE.format(memory="\n\n".join(notes))}]
    try:
        reply, calls, cost, _problems = _ask(summarize, request, seen)
    except CompactionFailed as failure:
        how = f", then merged the later memory blocks by code (merging failed: {failure.reason})"
        return block(_joined(notes)), failure.summary_calls, failure.cost, how
    if reply is None:
        how = ", then merged the later memory blocks by code (the merged notes were not usable)"
        return block(_joined(notes)), calls, cost, how
    return (block(reply.text), calls, cost,
            ", then merged the later memory blocks into one")


def _joined(notes: Sequence[str], max_chars: int = 4_000) -> str:
    """Notes merged by code: joined; when long, the earliest head and the latest tail."""
    text = "\n".join(notes)
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return f"{text[:half]}\n[…]\n{text[-half:]}"

