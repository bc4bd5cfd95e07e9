"""The compaction ladder: pure functions from a message list to a new message list.

    snip_old_tools          L1  old tool results → one constant placeholder
    session_memory_compact  L2  old rounds → incremental session memory + recent tail
    full_compact            L3  everything → one nine-section summary
    ptl_fallback            L4  after "prompt too long": drop the oldest whole rounds
    context_collapse        L5  cut large tool results to head + marker (a utility)

None mutates its input. Each returns a `LevelResult` — the new list, which also
says whether it changed and why. `summarize` is any callable model seam: it
takes OpenAI-format messages and returns text (or a `SummaryReply`).
`CompactionController` composes these and holds the state.
"""

from __future__ import annotations

from ._collapse import context_collapse
from ._common import CompactionFailed, LevelResult, Summarizer, SummaryReply
from ._memory import session_memory_compact
from ._limits import parse_token_limits
from ._ptl import ptl_fallback
from ._snip import snip_old_tools
from ._summary import SECTIONS, full_compact, parse_sections, validate_summary

__all__ = [
    "SECTIONS",
    "CompactionFailed",
    "LevelResult",
    "Summarizer",
    "SummaryReply",
    "context_collapse",
    "full_compact",
    "parse_sections",
    "parse_token_limits",
    "ptl_fallback",
    "session_memory_compact",
    "snip_old_tools",
    "validate_summary",
]
