"""One event stream per session. Every hook is a small frozen dataclass sent on it; a
subscriber is any callable taking one event (`agent.events.subscribe(print)`). The
archive, the meter and the chat display are subscribers like any user code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._decision import Decision, Trigger
from ._thresholds import ContextState, Limits

logger = logging.getLogger("nbagent")


@dataclass(frozen=True)
class MessageAdded:
    """A message joined the history (the archive's write-ahead record)."""

    message: dict[str, Any]


@dataclass(frozen=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolFinished:
    call_id: str
    name: str
    ok: bool
    chars: int  # what the model sees
    full_chars: int  # what the tool returned (more when capped on arrival)
    preview: str = ""  # the start of what the model sees


@dataclass(frozen=True)
class OutputStored:
    """A tool output too long for the context was kept whole for `read_output`."""

    ref: str
    text: str


@dataclass(frozen=True)
class CompactionStarted:
    """A compaction is about to run (nothing touched yet)."""

    trigger: Trigger
    tokens: int
    threshold: int
    focus: str | None


@dataclass(frozen=True)
class Rewriting:
    """A compaction's result, validated, just before it replaces the history: the
    archive writes it to disk first (write-ahead)."""

    messages: list[dict[str, Any]]


@dataclass(frozen=True)
class Compacted:
    """A compaction attempt ended (compacted or failed); its decision record, and the
    limits it ran under (what the state after it is read under: None when not known)."""

    decision: Decision
    limits: Limits[Any] | None = None


@dataclass(frozen=True)
class CompactionUndone:
    """The last compaction was undone: `decision` is its record, now marked `undone`
    (the history is back as it was; a `Rewriting` with it came just before)."""

    decision: Decision


@dataclass(frozen=True)
class Retrying:
    """A model call failed transiently and will be retried after `wait_s` seconds.
    `reason` is why, in a few words, as the room that retries classified the failure
    ("" when it did not say: a display then shows the error itself)."""

    attempt: int
    wait_s: float
    error: str
    reason: str = ""


@dataclass(frozen=True)
class Status:
    """What the agent is doing now, in a few words ("thinking…", "running describe…")."""

    text: str


@dataclass(frozen=True)
class Notice:
    """A line for the user to keep under the chat, said once when it happens: something
    outside the model changed or failed (a tool server could not start, restarted, changed
    its tools). A `Status` is a waiting line that the next one replaces."""

    text: str


@dataclass(frozen=True)
class CellProposed:
    """The model proposed code for a new notebook cell (never run without the user)."""

    code: str


@dataclass(frozen=True)
class ContextChanged:
    """The context state after anything that moved it: a reply, tool results, a compaction."""

    state: ContextState
    cost: float  # the session's cost so far, in USD (0 when unknown)


Event = (
    MessageAdded | ToolStarted | ToolFinished | OutputStored | CompactionStarted | Rewriting
    | Compacted | CompactionUndone | Retrying | Status | Notice | CellProposed | ContextChanged
)
# The stream carries the engine's `Event`s and events of the rooms above it (the agent's
# `CodeRan`, say): a room records a new event without editing this union, and a subscriber
# matches on the types it knows and ignores the rest. So both are typed for any event.
Subscriber = Callable[[Any], Any]


class EventStream:
    """Subscribers in the order they subscribed; `emit` tells each one.

    A subscriber that raises is logged and skipped: a broken display never breaks a
    chat. `critical` subscribers (the archive's write-ahead) propagate their errors.
    """

    def __init__(self) -> None:
        self._subscribers: list[tuple[Subscriber, bool]] = []

    def subscribe(self, subscriber: Subscriber, *, critical: bool = False) -> Subscriber:
        """Add `subscriber` (returned, so this works as a decorator)."""
        self._subscribers.append((subscriber, critical))
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        # `==`, not `is`: each `obj.method` access makes a new (equal) bound method
        self._subscribers = [(s, c) for s, c in self._subscribers if s != subscriber]

    def __contains__(self, subscriber: object) -> bool:
        return any(s == subscriber for s, _ in self._subscribers)

    def subscribers(self) -> list[Subscriber]:
        return [s for s, _ in self._subscribers]

    def emit(self, event: object) -> None:
        for subscriber, critical in list(self._subscribers):
            if critical:
                subscriber(event)
                continue
            try:
                subscriber(event)
            except Exception:
                logger.exception("an nbagent event subscriber failed on %s", type(event).__name__)
