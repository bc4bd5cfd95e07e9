"""The compaction levels, pure functions from a message list to a new one (L1 snip, L2
session memory, L3 full summary, L4 overflow fallback; L5 collapse, a utility on no
ladder), the floor, and the ladder: `LADDER`, the table of levels the controller runs,
printed by `describe_ladder()`. The one public path to them: `nbagent.engine.compaction`
is the engine's own door to its levels (the room's package, not a second public facade);
this module re-exports all of it and adds the ladder."""

from __future__ import annotations

from .engine._ladder import LADDER, Level, Rung, describe_ladder, levels_for
from .engine.compaction import (
    SECTIONS,
    Floor,
    LevelResult,
    Summarizer,
    SummaryReply,
    context_collapse,
    extract_floor,
    floor_budget,
    full_compact,
    is_summary_request,
    notebook_note,
    notebook_state_of,
    parse_sections,
    pins_of,
    ptl_fallback,
    session_memory_compact,
    snip_old_tools,
    validate_notes,
    validate_summary,
    with_notebook_state,
    with_pins,
)

__all__ = [
    "LADDER",
    "Level",
    "Rung",
    "describe_ladder",
    "levels_for",
    "Floor",
    "LevelResult",
    "SECTIONS",
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
