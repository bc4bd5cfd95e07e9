"""The events an `Agent` sends to its hooks. Each is a small frozen dataclass; a hook
is any callable taking one (`agent.hooks.append(print)`). The meter is one subscriber.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._controller import Decision
from ._llm import RetryEvent
from ._thresholds import ContextState


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
class Compacted:
    decision: Decision


@dataclass(frozen=True)
class ContextChanged:
    """The context state after anything that moved it: a reply, tool results, a compaction."""

    state: ContextState
    cost: float  # the session's cost so far, in USD (0 when unknown)


@dataclass(frozen=True)
class Retrying:
    event: RetryEvent


Event = ToolStarted | ToolFinished | Compacted | ContextChanged | Retrying
