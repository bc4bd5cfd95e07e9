"""The event types sent on every session's one `EventStream` (`agent.events`), and the
stream itself. Re-exported from the engine, where they live."""

from __future__ import annotations

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
