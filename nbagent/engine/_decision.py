"""`Decision`: the record every compaction controller call returns — what ran, why,
tokens before and after, summarizer calls, time and cost. A pydantic model, because
the archive stores it and the notebook's list of compactions reads it back.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Trigger = Literal["auto", "midloop", "manual", "overflow"]
Action = Literal["none", "skipped", "compacted", "failed"]
MAX_FAILURES = 3  # consecutive failed compactions that open the circuit breaker


class Decision(BaseModel):
    """What one controller call did, and why. Every controller call returns one."""

    model_config = ConfigDict(frozen=True)

    action: Action
    trigger: Trigger
    levels: list[str]
    reason: str
    tokens_before: int
    tokens_after: int
    threshold: int
    changed: bool
    summary_calls: int = 0
    duration_s: float = 0.0
    cost: float | None = None
    failures: int = 0
    breaker_open: bool = False
    focus: str | None = None
    summary: str | None = None
    left_view: str | None = None  # one line: what left the model's view, how to get it back
    undone: bool = False  # `controller.undo()` put the history back as it was before
