"""Every sentence the engine shows a user: the breaker and auto-compact notes, undo's
refusals, a compaction's progress lines, what left the view and a preview. They say
what happened and which Python call helps (`agent.compact()`); the notebook room adds
its own spellings. Texts written into the history itself are in `_markers`.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import _figures as figures

AUTO_OFF = "auto-compact off (NBAGENT_DISABLE_COMPACT)"
BREAKER_OPEN = ("breaker open: summaries failed {failures}× in a row; snipping still runs — "
                "agent.compact() to retry")
BREAKER_SKIP = ("circuit breaker open after {failures} failures: no summaries until a "
                "compaction succeeds")
NOTHING_TO_UNDO = "There is no compaction to undo in this session."
CANNOT_UNDO = ("Cannot undo the last compaction: the conversation went on since ({added} new "
               "messages). Its full text stays in the session archive.")
MODEL_OR_ANSWERS = ("Give either `model` (one object answering the model questions) or the "
                    "fixed answers (summarize, window, settings), not both.")

# why a compaction did not run, or did not count as a success (decision reasons)
AUTO_IS_OFF = "automatic compaction is off"
UNDER = "under the {trigger} trigger"
NO_REDUCTION = "no reduction"
STILL_OVER = "still {tokens}, over the {trigger} trigger"
LATEST_OVER = ("all but the latest round is folded: what is left is what every request "
               "carries and the latest round")
LOST_PENDING = "the result lost a pending tool call"
CHANGED_SYSTEM = "the result changed the system prompt"
# why the floor stood in for a summarizer call (the model's stated SummaryCost said no)
NOT_WORTH = ("not worth a summarizer call: it would free about {tokens}, under the "
             "{bar} ({share} of the window) its model asks of a call; the floor stands in")
SPENT = ("the compaction's summarizer calls are spent ({calls} of {calls} this model allows); "
         "the floor stands in")

GET_IT_BACK = "the recall tool finds any detail; agent.undo_compaction() restores it all"

# progress: one status line before each level runs, from what it will touch
# (the figures in these are written by `_figures` before they are filled in)
SNIPPING = "clearing {count} old tool output{s} (~{tokens})…"
FOLDING = "summarizing {turns} ({tokens}) into the session memory…"
SUMMARIZING = "summarizing {turns} ({tokens}) into one summary…"
FLOORING = "keeping what code can of {turns} ({tokens}; no model call)…"
DROPPING = "dropping the oldest rounds to fit the model's limit ({tokens} now)…"
MAKING_ROOM = ("still ~{tokens} over: folding all but the latest round to make room "
               "(no model call)…")
RUNNING = "running {level}…"

# a preview of the compaction `agent.compact()` would run now
PREVIEW_NOTHING = "A compaction now would change nothing ({tokens})."
PREVIEW_LEVELS = "A compaction now runs {levels} ({model}):"
PREVIEW_KEEPS = ("the floor keeps {users} user message{users_s}, {names}, {results} reported "
                 "result{results_s}; pinned facts kept verbatim: {pins}")
PREVIEW_TOKENS = ("about {before} → {after} (before the summarizer's notes); it "
                  "rewrites ~{rewrite} of the prompt cache")


def plural(count: int) -> str:
    return "" if count == 1 else "s"


def turns_text(turns: Sequence[int]) -> str:
    """"turn 4", "turns 3–41" (numbered from 1, as the user counts them)."""
    if not turns:
        return "no turns"
    if len(turns) == 1:
        return f"turn {turns[0]}"
    return f"turns {turns[0]}–{turns[-1]}"


def left_view_text(folded: Sequence[int], cleared: int, tokens: int) -> str | None:
    """One line: what left the model's view, and how to get it back (None: nothing did)."""
    parts = []
    if folded:
        parts.append(f"{turns_text(folded)} folded")
    if cleared:
        parts.append(f"{cleared} old tool output{plural(cleared)} cleared")
    if not parts:
        return None
    return f"Left the view: {', '.join(parts)} (~{figures.tokens(tokens)}); {GET_IT_BACK}."
