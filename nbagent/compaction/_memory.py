"""L2: a running session memory, updated incrementally.

The memory lives in the history itself, as append-only blocks after the system
prompt. Each run folds only the rounds not yet folded in — the summarizer sees
the previous memory for context plus those rounds, never the raw rounds it
already summarized — and appends one new block, so the prefix the provider
cached stays byte-identical. Only when the memory outgrows its budget are the
blocks after the first merged into one (a rare, deliberate cache rewrite).
"""

from __future__ import annotations

from collections.abc import Sequence

from .._markers import MEMORY_HEADER
from .._tokens import estimate_tokens
from ._common import (
    CompactionFailed,
    Layout,
    LevelResult,
    Message,
    Summarizer,
    SummaryReply,
    add_costs,
    call_summarizer,
    looks_like_error,
    tokens,
)
from ._floor import extract_floor
from ._render import render_transcript

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


def _block(notes: str, user_messages: Sequence[str]) -> Message:
    verbatim = "\n".join(f"- {text}" for text in user_messages)
    said = f"\n\nUser messages (verbatim):\n{verbatim}" if user_messages else ""
    return {"role": "user", "content": f"{MEMORY_HEADER}\n{notes.strip()}{said}"}


def _ask(summarize: Summarizer, request: list[Message]) -> tuple[SummaryReply, int]:
    """One call, retried once if the reply is empty or an error message."""
    for attempt in (1, 2):
        try:
            reply = call_summarizer(summarize, request)
        except CompactionFailed as failure:
            raise CompactionFailed(failure.reason, summary_calls=attempt) from failure
        except Exception as error:
            raise CompactionFailed(
                f"the summarizer raised {type(error).__name__}: {error}", summary_calls=attempt
            ) from error
        if reply.text.strip() and not looks_like_error(reply.text):
            return reply, attempt
    raise CompactionFailed("the summarizer returned no usable notes twice", summary_calls=2)


def _tail_start(
    messages: Sequence[Message],
    rounds: Sequence[int],
    min_tokens: int,
    max_tokens: int,
    min_messages: int,
) -> int:
    """Where the verbatim tail begins: a round start, walking back from the newest round."""
    start = rounds[-1]
    size = tokens(messages[start:])
    texts = sum(
        1 for m in messages[start:] if m["role"] in ("user", "assistant") and m.get("content")
    )
    for candidate in reversed(rounds[:-1]):
        if size >= min_tokens and texts >= min_messages:
            break
        grown = tokens(messages[candidate:start])
        if size + grown > max_tokens:
            break
        texts += sum(
            1
            for m in messages[candidate:start]
            if m["role"] in ("user", "assistant") and m.get("content")
        )
        size, start = size + grown, candidate
    return start


def session_memory_compact(
    messages: Sequence[Message],
    summarize: Summarizer,
    *,
    focus: str | None = None,
    tail_min_tokens: int = 10_000,
    tail_max_tokens: int = 40_000,
    tail_min_messages: int = 5,
    min_fold_tokens: int = 0,
    memory_max_tokens: int | None = None,
    max_input_tokens: int | None = None,
) -> LevelResult:
    """Fold the rounds before a verbatim recent tail into the session memory.

    Returns the history as [system] + memory blocks + tail, or the input
    unchanged (`changed=False`, with the reason) when there is too little to
    fold in — the controller then falls back to `full_compact`. Raises
    `CompactionFailed` when the summarizer fails twice.
    """
    layout = Layout.of(messages)
    if len(layout.rounds) < 2:
        return LevelResult.unchanged(messages, "fewer than two rounds: nothing to fold in")
    split = _tail_start(
        messages, layout.rounds, tail_min_tokens, tail_max_tokens, tail_min_messages
    )
    fold_end = split
    if max_input_tokens is not None:  # fold only as many old rounds as the summarizer can read
        budget = int(max_input_tokens * 0.6)
        candidates = [r for r in layout.rounds if r <= split][1:] or [split]
        fold_end = candidates[0]
        for end in candidates:
            if estimate_tokens(render_transcript(messages[layout.blocks_end : end])) > budget:
                break
            fold_end = end
    folded = messages[layout.blocks_end : fold_end]
    if not folded or tokens(folded) < min_fold_tokens:
        return LevelResult.unchanged(messages, "too little before the recent tail to fold in")

    blocks = list(messages[layout.body : layout.blocks_end])
    memory = "\n\n".join(str(b["content"]) for b in blocks) or "(empty: this is the first part)"
    transcript = render_transcript(folded)
    if focus:
        transcript += f"\n\n(The user asks the memory to focus on: {focus})"
    request = [
        {"role": "system", "content": MEMORY_SYSTEM},
        {"role": "user", "content": _UPDATE.format(memory=memory, transcript=transcript)},
    ]
    reply, calls = _ask(summarize, request)
    cost = reply.cost
    new_blocks = [*blocks, _block(reply.text, extract_floor(folded).user_messages)]
    reason = f"folded {len(folded)} messages into the session memory"
    if memory_max_tokens is not None and tokens(new_blocks) > memory_max_tokens and len(blocks) > 1:
        # The first block (the first request and the earliest notes) stays byte-identical.
        everything = "\n\n".join(str(b["content"]) for b in new_blocks[1:])
        merge = [
            {"role": "system", "content": MEMORY_SYSTEM},
            {"role": "user", "content": _MERGE.format(memory=everything)},
        ]
        try:
            merged, more = _ask(summarize, merge)
        except CompactionFailed as failure:  # the fold stands; merging can wait for next time
            calls += failure.summary_calls
            reason += f"; merging the memory failed ({failure.reason}), kept it as blocks"
        else:
            calls, cost = calls + more, add_costs(cost, merged.cost)
            new_blocks = [new_blocks[0], _block(merged.text, ())]
            reason += ", then merged the later memory blocks into one"
    result = [*messages[: layout.body], *new_blocks, *messages[fold_end:]]
    if tokens(result) >= tokens(messages):
        return LevelResult(
            messages,
            changed=False,
            summary_calls=calls,
            cost=cost,
            reason="the memory is not smaller than what it would replace",
        )
    return LevelResult(
        result,
        changed=True,
        reason=reason,
        summary_calls=calls,
        cost=cost,
        summary=str(new_blocks[-1]["content"]),
    )
