"""`Attempt`: what one compaction attempt has done so far — the levels that changed the
history, their reasons, calls, cost, summary and what left the view — for its decision
record."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ._decision import Trigger
from .compaction._common import add_costs


@dataclass
class Attempt:
    """What one compaction attempt has done so far, for its decision record."""

    trigger: Trigger
    before: int
    threshold: int
    focus: str | None
    levels: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    calls: int = 0
    cost: float | None = None
    summary: str | None = None
    degraded: bool = False
    holds_breaker: bool = False  # the floor stood in for an open breaker
    left_view: str | None = None
    started: float = field(default_factory=time.perf_counter)

    def spent(self, calls: int, cost: float | None) -> None:
        self.calls += calls
        self.cost = add_costs(self.cost, cost)
