"""The event types sent on every session's one `EventStream` (`agent.events`), and the
stream itself. Re-exported from the rooms where they live (the engine's; a delegated
task's from the agent room, with `Branch`, the record `BranchFinished` carries and
`agent.branches()` lists)."""

from __future__ import annotations

from .agent._branch_events import (
    Branch,
    BranchFinished,
    BranchMessage,
    BranchProgress,
    BranchStarted,
)
from .engine._events import (
    CellProposed,
    Compacted,
    CompactionStarted,
    CompactionUndone,
    ContextChanged,
    Event,
    EventStream,
    MessageAdded,
    Notice,
    OutputStored,
    Retrying,
    Rewriting,
    Status,
    Subscriber,
    ToolFinished,
    ToolStarted,
)

__all__ = [
    "Branch",
    "BranchFinished",
    "BranchMessage",
    "BranchProgress",
    "BranchStarted",
    "CellProposed",
    "Compacted",
    "CompactionStarted",
    "CompactionUndone",
    "ContextChanged",
    "Event",
    "EventStream",
    "MessageAdded",
    "Notice",
    "OutputStored",
    "Retrying",
    "Rewriting",
    "Status",
    "Subscriber",
    "ToolFinished",
    "ToolStarted",
]
