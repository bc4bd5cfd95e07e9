"""Running a ladder: `run_ladder` runs the bound levels on a copy of the history, in
order — each level's own flags decide whether it runs (fallback, stop rule, terminal) —
with a progress line for each level that acts and a stand-in for a summarizer that fails
or whose call is not worth its cost;
`check_result` says whether what it made may replace the history. A preview runs the same
function dry. The state around it (breaker, undo, the decision) is the controller's.
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
from .compaction import LevelResult

Message = dict[str, Any]


def _quiet(status: Status) -> None:
    """A dry run shows nothing."""


def run_ladder(trigger: Trigger, history: History, levels: list[Level], attempt: Attempt, *,
               fits_under: int, target: int, standin: Callable[[], Level],
               status: Callable[[Status], None] = _quiet, dry: bool = False) -> list[Message]:
    """Run `levels` on a copy of `history` and return the result; `attempt` records what
    acted. A summarizer that fails leaves the stand-in (the floor) in its place.

    The stop rule is each level's (`needed_over`): once a level has acted, an automatic
    ladder skips a level whose bound the history now fits — `fits_under` (the trigger) or
    `target` (the compact target) — and goes on to the next, so a level added anywhere
    cannot end the ladder for the levels after it. A manual compaction runs every level.
    A last resort (only ever on an automatic ladder) runs after every other level, a
    terminal one too, and decides by the room it is given whether to act.
    A model level whose call would not be worth it (`Level.not_called`: too little freed
    for what its model states a call costs, or the compaction's calls spent) is not
    called: the stand-in runs in its place, under its own name, in a preview too.
    `dry`: a model level is not called; the stand-in runs in its place under its name, as
    if the summarizer had failed, and nothing is shown (the preview).
    """
    work, current = history.messages, history
    bounds = {"trigger": fits_under - 1, "target": target}
    model_changed = stopped = False
    for level in levels:
        if level.last_resort:
            pass  # it checks the room it is given itself (never on a manual ladder)
        elif stopped:
            continue  # after a terminal level only a last resort runs
        elif level.fallback and model_changed:
            continue  # a fallback replaces a model level that could not run, never adds to one
        else:
            # Scaled from the counts the history already has: no re-count per level.
            projected = round(attempt.before * current.estimated_tokens
                              / max(1, history.estimated_tokens))
            if trigger != "manual" and attempt.levels and \
                    projected <= bounds[level.needed_over]:
                continue  # a cheaper level already made it fit: this one is not needed
        ran, counts = level, current.token_counts()
        skipped = level.not_called(work, counts, attempt.calls)
        if skipped is not None:
            attempt.reasons.append(f"{level.name}: {skipped}")
            ran = standin()
            result = _shown(ran, work, counts, status)
        elif dry and level.calls_model:
            ran = standin()
            result = ran(work, counts)
        else:
            left = None if level.max_calls is None else level.max_calls - attempt.calls
            ran, result = _run(level, work, counts, attempt, status, standin, left)
        attempt.spent(result.summary_calls, result.cost)
        attempt.reasons.append(f"{ran.name}: {result.reason}")
        attempt.exhausted |= result.exhausted
        if result.changed:
            # a floor standing in for a call not made says nothing of the summarizer: the
            # breaker stays as it is
            attempt.holds_breaker |= level.holds_breaker or skipped is not None
            attempt.levels.append(level.name if dry and skipped is None else ran.name)
            attempt.degraded |= result.degraded
            attempt.summary = result.summary or attempt.summary
            work = list(result)
            current = history.copy_with(work)
            model_changed |= level.calls_model
        # the floor folded all that is old: a later level would fold it again (but a last
        # resort, which acts only if the history is still over the trigger)
        stopped |= ran.terminal
    return work


def _run(level: Level, work: list[Message], counts: list[int], attempt: Attempt,
         status: Callable[[Status], None], standin: Callable[[], Level],
         calls_left: int | None = None) -> tuple[Level, LevelResult]:
    """Run one level, or the stand-in when its summarizer fails: (what ran, its result)."""
    try:
        return level, _shown(level, work, counts, status, calls_left)
    except CompactionFailed as failure:
        attempt.spent(failure.summary_calls, failure.cost)
        if not level.calls_model:  # recorded once, by the controller
            raise CompactionFailed(f"{level.name}: {failure.reason}") from failure
        attempt.reasons.append(f"{level.name}: {failure.reason}")
        attempt.degraded = True  # the summarizer failed: counts against the breaker
        ran = standin()
        return ran, _shown(ran, work, counts, status)


def _shown(level: Level, work: list[Message], counts: list[int],
           status: Callable[[Status], None], calls_left: int | None = None) -> LevelResult:
    """Run `level` with its status line, only for a level that acts: a model level's line
    goes before the call (the call takes a while; its plan said there is something to
    fold), a deterministic level's once it changed something (it is quick, and only
    running it tells whether it acts: a snip below its batch minimum does nothing)."""
    line = level.describe(work, counts)
    if line is not None and level.calls_model:
        status(Status(line))
    result = level(work, counts, calls_left=calls_left)
    if line is not None and not level.calls_model and result.changed:
        status(Status(line))
    return result


def check_result(original: list[Message], work: list[Message], history: History) -> None:
    """A result must be a valid history with the same system prompt and pending calls."""
    pending = validate_messages(work)
    if pending != history.pending_tool_calls:
        raise CompactionFailed(texts.LOST_PENDING)
    preamble = history.preamble.stop
    if work[:preamble] != original[:preamble]:
        raise CompactionFailed(texts.CHANGED_SYSTEM)
