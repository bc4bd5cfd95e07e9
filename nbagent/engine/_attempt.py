"""`Attempt`: what one compaction attempt has done so far — the levels that changed the
history, their reasons, calls, cost, summary and what left the view — for its decision
record, and the record itself."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ._decision import Action, Decision, Trigger
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

    def decision(self, action: Action, after: int, *, swapped: bool, failures: int,
                 breaker_open: bool) -> Decision:
        """The decision record of this attempt, ending now with `after` tokens."""
        return Decision(
            action=action, trigger=self.trigger, levels=self.levels,
            reason="; ".join(self.reasons), tokens_before=self.before, tokens_after=after,
            threshold=self.threshold, changed=swapped, summary_calls=self.calls,
            duration_s=time.perf_counter() - self.started, cost=self.cost,
            failures=failures, breaker_open=breaker_open, focus=self.focus,
            summary=self.summary if swapped else None,
            left_view=self.left_view if swapped else None,
        )
