"""The compaction ladder: pure functions from a message list to a new message list.

    snip_old_tools          L1  old tool results → a placeholder with a digest of them
    session_memory_compact  L2  old rounds → incremental session memory + recent tail
    full_compact            L3  everything → one summary, a section per `SECTIONS` title
    ptl_fallback            L4  after "prompt too long": drop the oldest whole rounds
    context_collapse        L5  cut large tool results to head + marker (a utility)

None mutates its input. Each returns a `LevelResult` — the new list, which also
says whether it changed and why. Each takes `counts` (one token count per message)
so it never re-estimates what did not change. Every level that removes text keeps
its deterministic floor (see `floor_budget`). `summarize` is any callable model seam:
it takes OpenAI-format messages and returns text (or a `SummaryReply`).
`with_pins` and `with_notebook_state` place the two blocks the controller writes;
`notebook_note` is the note the agent appends when the kernel's variables changed.
`CompactionController` composes these and holds the state.
"""

from __future__ import annotations

from ._collapse import context_collapse
from ._common import LevelResult, Summarizer, SummaryReply
from ._floor import Floor, extract_floor, floor_budget
from ._memory import session_memory_compact
from ._memory_blocks import validate_notes
from ._placement import notebook_note, notebook_state_of, pins_of, with_notebook_state, with_pins
from ._ptl import ptl_fallback
from ._snip import snip_old_tools
from ._summary import (
    SECTIONS,
    full_compact,
    is_summary_request,
    parse_sections,
    validate_summary,
)

__all__ = [
    "SECTIONS",
    "Floor",
    "LevelResult",
    "Summarizer",
    "SummaryReply",
    "context_collapse",
    "extract_floor",
    "floor_budget",
    "full_compact",
    "is_summary_request",
    "notebook_note",
    "notebook_state_of",
    "parse_sections",
    "pins_of",
    "ptl_fallback",
    "session_memory_compact",
    "snip_old_tools",
    "validate_notes",
    "validate_summary",
    "with_notebook_state",
    "with_pins",
]
