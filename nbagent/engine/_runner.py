"""Running a ladder: `run_ladder` runs the bound levels on a copy of the history, in
order, with a progress line before each, a stand-in for a summarizer that fails, and the
stop rule; `check_result` says whether what it made may replace the history. The state
around it (breaker, undo, the decision) is the controller's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _texts as texts
from ._attempt import Attempt
from ._decision import Trigger
from ._events import Status
from ._exceptions import CompactionFailed
from ._history import History, validate_messages
from ._ladder import Level

Message = dict[str, Any]


def run_ladder(trigger: Trigger, history: History, levels: list[Level], attempt: Attempt, *,
               fits_under: int, target: int, status: Callable[[Status], None],
               standin: Callable[[], Level]) -> list[Message]:
    """Run the ladder on a copy; a summarizer that fails leaves the floor instead.
    An automatic ladder stops once the history fits under `fits_under`, and before
    the memory level (a first-choice model level) once it is at or under `target`:
    a fold is worth its call and its cache rewrite only when the cheaper levels left
    the history near the trigger. Each level gets the per-message counts, so nothing
    unchanged is counted twice."""
    work, current = history.messages, history
    model_changed = False
    for level in levels:
        if level.fallback and model_changed:
            continue
        projected = round(attempt.before * current.estimated_tokens
                          / max(1, history.estimated_tokens))
        enough = target if level.calls_model and not level.fallback else fits_under - 1
        if trigger != "manual" and attempt.levels and projected <= enough:
            break  # a cheaper level already made it fit
        ran, counts = level, current.token_counts()
        status(Status(level.describe(work, counts)))
        try:
            result = level(work, counts)
        except CompactionFailed as failure:
            attempt.spent(failure.summary_calls, failure.cost)
            if not level.calls_model:  # recorded once, by the controller
                raise CompactionFailed(f"{level.name}: {failure.reason}") from failure
            attempt.reasons.append(f"{level.name}: {failure.reason}")
            attempt.degraded = True  # the summarizer failed: counts against the breaker
            ran = standin()
            status(Status(ran.describe(work, counts)))
            result = ran(work, counts)
        attempt.spent(result.summary_calls, result.cost)
        attempt.reasons.append(f"{ran.name}: {result.reason}")
        if result.changed:
            attempt.holds_breaker |= level.holds_breaker
            attempt.levels.append(ran.name)
            attempt.degraded |= result.degraded
            attempt.summary = result.summary or attempt.summary
            work = list(result)
            current = history.copy_with(work)
            model_changed |= level.calls_model
        if ran.terminal:
            break
    return work


def check_result(original: list[Message], work: list[Message], history: History) -> None:
    """A result must be a valid history with the same system prompt and pending calls."""
    pending = validate_messages(work)
    if pending != history.pending_tool_calls:
        raise CompactionFailed(texts.LOST_PENDING)
    preamble = history.preamble.stop
    if work[:preamble] != original[:preamble]:
        raise CompactionFailed(texts.CHANGED_SYSTEM)
