"""A session memory block (L2's unit): the summarizer's notes, checked (`validate_notes`,
retried once when not usable), then the floor of what it folded; reading a block's notes
back; and merging several blocks into one, floors included, when the memory outgrows its
budget. Where the level folds is `_fold_span`; the level itself is `_memory`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from .._exceptions import CompactionFailed
from .._markers import MEMORY_HEADER
from ._common import Message, Summarizer, SummaryReply, ask_within, looks_like_error
from ._evidence import notes_only_line
from ._floor import EMPTY, Floor, kept_floor, names_shown, notes_end
from ._floor_render import render_floor

MEMORY_SYSTEM = (
    "You keep the working memory of a long conversation between a data scientist and an AI "
    "assistant in a Jupyter notebook. Write terse notes the assistant can continue from: "
    "goals, decisions, exact names (files, variables, columns), results, errors and their "
    "fixes, open tasks."
)
_MERGE = """Merge these memory notes into one shorter memory that keeps every goal, decision, \
exact name, result and open task:
<memory>
{memory}
</memory>"""
_RETRY = ("That reply is not usable: {problems}. Write the notes again: the goals, decisions, "
          "results and open tasks, naming the exact files, variables and columns.")
FLOOR_ONLY = "(No notes: {why}. What follows was kept by code, verbatim.)"
NOT_CALLED = "the summarizer was not called"
_NOT_USABLE = "the summarizer's notes were not usable"
# how a block without notes begins (`block_notes` reads it so): from FLOOR_ONLY, so a reworded
# FLOOR_ONLY cannot make a floor-only block's text pass for notes
_NO_NOTES = FLOOR_ONLY[: FLOOR_ONLY.index("{")].rstrip()
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


def memory_block(notes: str | None, floor: Floor, budget: int, why: str = _NOT_USABLE, *,
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


def block_notes(block: Message) -> str | None:
    """The summarizer's notes in a memory block (None when it kept the floor alone)."""
    text = str(block["content"])[len(MEMORY_HEADER):]
    notes = text[:notes_end(text)].strip()
    return None if not notes or notes.startswith(_NO_NOTES) else notes


def ask_notes(
    summarize: Summarizer, request: list[Message], floor: Floor, max_calls: int | None = None
) -> tuple[SummaryReply | None, int, float | None, list[str]]:
    """One call, retried once (within `max_calls`) if the notes are not usable;
    (None, ...) if none were."""
    reply, calls, cost, problems = ask_within(
        summarize, request, lambda text: validate_notes(text, floor), _RETRY, max_calls)
    return (None if problems else reply), calls, cost, problems


def merge_blocks(
    blocks: Sequence[Message], summarize: Summarizer | None, floor_budget: int, seen: Floor
) -> tuple[Message, int, float | None, str]:
    """One block from several: the notes merged by the summarizer (or, when it fails, by
    code: joined and cut), the floors merged by code under `floor_budget` (with the
    names the old notes showed, which their floors did not print). The merged notes must
    name something `seen` holds."""
    floor = sum((kept_floor(str(b["content"])) for b in blocks), EMPTY)
    budget = max(floor_budget, 1)

    def block(notes: str | None) -> Message:
        return memory_block(notes, floor, budget, real=seen.names)

    notes = [n for n in map(block_notes, blocks) if n is not None]
    if not notes:
        how = ", then merged the later memory blocks' floors"
        return block(None), 0, None, how
    if len(notes) == 1 or summarize is None:
        how = ", then merged the later memory blocks"
        return block(_joined(notes)), 0, None, how
    request = [{"role": "system", "content": MEMORY_SYSTEM},
               {"role": "user", "content": _MERGE.format(memory="\n\n".join(notes))}]
    try:
        reply, calls, cost, _problems = ask_notes(summarize, request, seen)
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

