"""Fakes and readers that ship with nbagent, for your tests and ours.

Fakes: `ScriptedModel` and `ScriptedSummarizer` replay a script and record every call
(same interface as the model seam); `Standalone` gives a `CompactionController` fixed
answers about its model (a window, settings, a summarizer).
Readers, to assert on what nbagent wrote: what a compaction left in a history (a summary,
a session-memory block, the notebook-state block, a notebook note, a snipped tool result,
a plain user message, the floor a block carries, `INTERRUPTED`: the result of a tool call a
stopped turn left unanswered) and what a session archive holds (where a session's file is,
its records, the session it replays to, recall over it).
Builders, to set a history up as nbagent would have left it: `snip_placeholder` (the text
an old tool result becomes under L1). Re-exported from the rooms where each lives.
"""

from __future__ import annotations

from .agent._texts import INTERRUPTED
from .agent.archive._archive import Archive, read_records, recall, replay, session_path
from .agent.models._scripted import (
    ModelStep,
    ProviderError,
    ScriptedModel,
    ScriptedSummarizer,
    Step,
    calls,
    offline_analyst,
    provider_error,
    reply,
)
from .engine._markers import (
    MEMORY_HEADER,
    NOTE_HEADER,
    STATE_HEADER,
    SUMMARY_HEADER,
    is_memory,
    is_note,
    is_plain_user,
    is_snipped,
    is_summary,
    snip_placeholder,
)
from .engine._questions import Standalone
from .engine.compaction._floor import kept_floor, parse_floor

__all__ = [
    "INTERRUPTED",
    "MEMORY_HEADER",
    "NOTE_HEADER",
    "STATE_HEADER",
    "SUMMARY_HEADER",
    "Archive",
    "ModelStep",
    "ProviderError",
    "ScriptedModel",
    "ScriptedSummarizer",
    "Standalone",
    "Step",
    "calls",
    "is_memory",
    "is_note",
    "is_plain_user",
    "is_snipped",
    "is_summary",
    "kept_floor",
    "offline_analyst",
    "parse_floor",
    "provider_error",
    "read_records",
    "recall",
    "replay",
    "reply",
    "session_path",
    "snip_placeholder",
]
