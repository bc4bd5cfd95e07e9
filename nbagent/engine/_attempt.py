"""`Attempt`: what one compaction attempt has done so far — the levels that changed the
history, their reasons, calls, cost, summary and what left the view — for its decision
record, and the record itself, built generically from `Decision`'s own field list.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ._decision import Action, Decision, Trigger
from .compaction._common import add_costs

# Decision fields this attempt keeps under a shorter name (the runner reads them so).
_RENAMED = {"tokens_before": "before", "summary_calls": "calls"}
# Only a history that was swapped in has a summary and something that left the view: a
# failed rewrite leaves the history as it was, so saying what left would be false.
_IF_SWAPPED = ("summary", "left_view")


@dataclass
class Attempt:
    """What one compaction attempt has done so far, for its decision record. An attribute
    named as a `Decision` field (or in `_RENAMED`) goes into the record by that name; a
    value computed elsewhere goes in with `record(...)`, so a new Decision field needs no
    copying here."""

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
    exhausted: bool = False  # a last resort folded all it may (`LevelResult.exhausted`)
    started: float = field(default_factory=time.perf_counter)
    recorded: dict[str, Any] = field(default_factory=dict)

    def spent(self, calls: int, cost: float | None) -> None:
        self.calls += calls
        self.cost = add_costs(self.cost, cost)

    def record(self, **values: Any) -> None:
        """Set Decision fields computed outside the attempt (e.g. by the controller)."""
        unknown = sorted(set(values) - set(Decision.model_fields))
        if unknown:  # a typo would otherwise be dropped without a word
            raise TypeError(f"not fields of Decision: {', '.join(unknown)}")
        self.recorded.update(values)

    def decision_fields(self, action: Action, after: int, *, swapped: bool, failures: int,
                        breaker_open: bool) -> dict[str, Any]:
        """Every value this attempt gives its Decision, by the Decision's field names."""
        values: dict[str, Any] = {}
        for name in Decision.model_fields:
            own = _RENAMED.get(name, name)
            if own in self.__dataclass_fields__:
                values[name] = getattr(self, own)
        values.update(self.recorded)
        values.update(
            action=action, reason="; ".join(self.reasons), tokens_after=after, changed=swapped,
            duration_s=time.perf_counter() - self.started, failures=failures,
            breaker_open=breaker_open, undone=False)
        if not swapped:
            values.update(dict.fromkeys(_IF_SWAPPED))
        return values

    def decision(self, action: Action, after: int, *, swapped: bool, failures: int,
                 breaker_open: bool) -> Decision:
        """The decision record of this attempt, ending now with `after` tokens."""
        return Decision(**self.decision_fields(action, after, swapped=swapped,
                                               failures=failures, breaker_open=breaker_open))
