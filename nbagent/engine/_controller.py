"""`CompactionController`: the state that keeps one session's history inside its window —
the circuit breaker, undo, the decision log — and its four entry points, each applying a
ladder and swapping the result in only when it is valid. What runs for each trigger is
data (`_ladder.LADDER`); running it is `_runner`'s; the levels are pure functions. Each
entry point works under one `Limits` snapshot: the caller's, or one it asks for once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from . import _figures as figures
from . import _texts as texts
from ._attempt import Attempt
from ._decision import MAX_FAILURES, Action, Decision, Trigger
from ._events import Compacted, CompactionStarted, CompactionUndone, EventStream, Rewriting, Status
from ._exceptions import CompactionFailed, NbagentError
from ._history import History
from ._ladder import LADDER, Level, Rung, levels_for, standin
from ._level_context import LadderContext
from ._preview import Preview, preview
from ._questions import ModelQuestions, Standalone
from ._runner import check_result, run_ladder
from ._settings import EngineSettings
from ._thresholds import ContextState, Limits, Thresholds, context_state
from ._tracker import TokenTracker
from ._view import view_change
from ._window import WindowInfo
from .compaction import Summarizer
from .compaction._common import INTERRUPTS, error_text
from .compaction._ptl import TokenLimits

__all__ = ["MAX_FAILURES", "CompactionController"]
Message = dict[str, Any]


class CompactionController:
    """Keeps one session's history inside the window it serves.

        controller = CompactionController(summarize=my_summarizer, window="claude-sonnet-4-5")
        decision = controller.maybe_compact(history)
        decision.action, decision.tokens_before, decision.tokens_after

    Args:
        model: the one object that answers the model questions (the limits — settings,
            window, thresholds — the count, the summarizer, refresh); a session passes its
            answers. Without one, the options below give fixed answers:
        summarize: the model seam that writes memories and summaries; without one,
            compaction is deterministic only (snips and the floor).
        window: the window it serves: a `WindowInfo`, or a model name resolved from the
            built-in table.
        summarizer_window: the summarizing model's input window, if known.
        settings: fixed settings; by default read from the environment at each use.
        tracker: the session's token tracker (real usage + estimate).
        events: the session's event stream (compaction started, progress `Status` lines,
            rewriting, compacted, undone).
        ladder: the table of levels (`LADDER` by default).
    """

    def __init__(
        self,
        model: ModelQuestions[Any] | None = None,
        *,
        summarize: Summarizer | None = None,
        window: WindowInfo | str = "default",
        summarizer_window: int | None = None,
        settings: EngineSettings | None = None,
        tracker: TokenTracker | None = None,
        events: EventStream | None = None,
        ladder: Sequence[Rung] = LADDER,
    ) -> None:
        self.ladder = tuple(ladder)
        self.tracker = tracker if tracker is not None else TokenTracker()
        self.events = events if events is not None else EventStream()
        if model is not None and (summarize is not None or window != "default"
                                  or summarizer_window is not None or settings is not None):
            raise ValueError(texts.MODEL_OR_ANSWERS)
        # what it asks about its model (a session, or fixed answers); `.model` elsewhere is
        # a chat model, so this is `questions`
        self.questions: ModelQuestions[Any] = model if model is not None else Standalone(
            summarize, window, summarizer_window, settings, self.tracker)
        self._failures = 0
        self._undo: tuple[list[Message], int, int, Decision] | None = None
        self.decisions: deque[Decision] = deque(maxlen=100)  # the archive keeps them all

    # -- state ---------------------------------------------------------------------------

    def limits(self) -> Limits[EngineSettings]:
        """The settings, the window and the thresholds now, in one snapshot (asked of the
        model questions): what an entry point works under, and what a caller doing several
        things at once (a turn) takes once and passes to each."""
        return self.questions.limits()

    def settings(self) -> EngineSettings:
        return self.limits().settings

    def window(self) -> WindowInfo:
        return self.limits().window

    @property
    def summarize(self) -> Summarizer | None:
        """The summarizer compactions call now (asked of the model each time)."""
        return self.questions.summarizer()[0]

    @property
    def summarizer_window(self) -> int | None:
        """The summarizing model's input window, if known."""
        return self.questions.summarizer()[1]

    def thresholds(self) -> Thresholds:
        return self.limits().thresholds

    def count(self, history: History, limits: Limits[EngineSettings] | None = None) -> int:
        """Tokens the next request would occupy (under `limits`: by default the limits now)."""
        return self.questions.count(history, limits)

    def state(self, history: History, limits: Limits[EngineSettings] | None = None
              ) -> ContextState:
        """The context state (percent left, level, armed) of `history` under `limits`."""
        limits = limits if limits is not None else self.limits()
        return context_state(limits.window, self.count(history, limits),
                             breaker_open=self.breaker_open, limits=limits.thresholds)

    def failure_count(self) -> int:
        """Consecutive failed compactions (a verified reduction resets it)."""
        return self._failures

    @property
    def breaker_open(self) -> bool:
        """After three consecutive failures no summarizer is called automatically
        (snips, the floor and L4 still run) until a compaction succeeds."""
        return self._failures >= MAX_FAILURES

    def reset_failures(self) -> None:
        self._failures = 0

    def restore_failures(self, count: int) -> None:
        """Set the consecutive-failure count (a resumed session's breaker)."""
        self._failures = max(0, int(count))

    def undo(self, history: History) -> None:
        """Put back the history as it was before the last compaction, if nothing was added
        since; otherwise raise `NbagentError` saying why."""
        if self._undo is None:
            raise NbagentError(texts.NOTHING_TO_UNDO)
        before, generation, length, decision = self._undo
        # A message added since would be lost by putting `before` back: refuse instead.
        if history.generation != generation or len(history) != length:
            raise NbagentError(texts.CANNOT_UNDO.format(added=len(history) - length))
        self.events.emit(Rewriting(before))
        history.replace(before)
        self._undo = None
        undone = decision.model_copy(update={"undone": True})
        self.decisions = deque((undone if d is decision else d for d in self.decisions),
                               maxlen=self.decisions.maxlen)
        self.events.emit(CompactionUndone(undone))

    # -- the four entry points: each under the caller's `limits` or ones it asks for once --

    def maybe_compact(self, history: History, limits: Limits[EngineSettings] | None = None
                      ) -> Decision:
        """At a turn boundary: compact when enabled and at or over the auto-compact trigger."""
        limits = limits if limits is not None else self.limits()
        at = limits.thresholds
        tokens = self.count(history, limits)
        held = self._hold("auto", tokens, at.auto_compact, at)
        if held is not None:
            return held
        return self._apply("auto", history, limits, tokens, None, self._levels(
            "auto", limits, room_tokens=self._room(history, tokens, limits)))

    def compact_now(self, history: History, *, focus: str | None = None,
                    limits: Limits[EngineSettings] | None = None) -> Decision:
        """Compact on request (`agent.compact()`): runs with the breaker open; success closes it.

        L1 snip, then L2 session memory, or L3 full summary when L2 could not run;
        a summarizer that fails leaves the floor. `focus` reaches the summarizer.
        """
        limits = limits if limits is not None else self.limits()
        return self._apply("manual", history, limits, self.count(history, limits), focus,
                           self._levels("manual", limits, focus=focus))

    def preview(self, history: History, focus: str | None = None,
                limits: Limits[EngineSettings] | None = None) -> Preview:
        """What `compact_now(focus=focus)` would do now, computed without calling the
        summarizer or changing anything (see `Preview`)."""
        limits = limits if limits is not None else self.limits()
        at = limits.thresholds
        levels = self._levels("manual", limits, focus=focus)
        attempt = Attempt("manual", self.count(history, limits), at.auto_compact, focus)
        # The same runner as `compact_now`, dry: what it reports is what would run.
        work = run_ladder("manual", history, levels, attempt, fits_under=at.auto_compact,
                          target=at.auto_compact - 1, standin=self._standin(focus, limits),
                          dry=True)
        # in the order they acted; the floor when it stood in for a call not worth making
        by_name, floor = {level.name: level for level in levels}, self._standin(focus, limits)
        acted = [by_name[name] if name in by_name else floor() for name in attempt.levels]
        return preview(history, work, acted, tokens_before=attempt.before,
                       count=lambda counted: self.count(counted, limits), focus=focus)

    def on_tool_result(self, history: History, limits: Limits[EngineSettings] | None = None
                       ) -> Decision:
        """Mid-loop, after a round of tool results: a budget-aware micro-snip when over
        the mid-loop trigger (or the full ladder, if `midloop_full_compact` is set).
        Pending tool calls are never touched."""
        limits = limits if limits is not None else self.limits()
        at = limits.thresholds
        tokens = self.count(history, limits)
        held = self._hold("midloop", tokens, at.midloop, at)
        if held is not None:
            return held
        target = limits.settings.midloop_target_ratio * at.auto_compact
        raw_target = round(history.estimated_tokens * target / max(tokens, 1))
        return self._apply("midloop", history, limits, tokens, None,
                           self._levels("midloop", limits, target_tokens=raw_target))

    def handle_ptl_error(self, history: History, overflow: TokenLimits | None = None,
                         limits: Limits[EngineSettings] | None = None) -> Decision:
        """After "prompt too long": drop the oldest rounds to fit `overflow`, the (actual,
        limit) the provider stated (`nbagent.providers.parse_token_limits`)."""
        limits = limits if limits is not None else self.limits()
        return self._apply("overflow", history, limits, self.count(history, limits), None,
                           self._levels("overflow", limits, overflow=overflow))

    # -- machinery -------------------------------------------------------------------------

    def _levels(self, trigger: Trigger, limits: Limits[EngineSettings], **options: Any
                ) -> list[Level]:
        summarize, summarizer_window = self.questions.summarizer(limits)
        return levels_for(trigger, settings=limits.settings, limits=limits.thresholds,
                          summarize=summarize, summarizer_window=summarizer_window,
                          breaker_open=self.breaker_open, ladder=self.ladder, **options)

    def _room(self, history: History, tokens: int, limits: Limits[EngineSettings]) -> int:
        """What the history's messages may take, in its own counts, for a request to fit
        under the auto-compact trigger: what every request carries besides them (the tool
        schemas, the reply's priming: the count of the preamble alone, less its messages)
        comes off, and the rest is scaled from our count of the request to the history's
        counts."""
        trigger = limits.thresholds.auto_compact
        head = history.copy_with(history.messages[:history.preamble.stop])
        fixed = self.count(head, limits)  # the preamble, the tools, the priming
        body = history.estimated_tokens - head.estimated_tokens
        counted = tokens - fixed
        scale = body / counted if body > 0 and counted > 0 else 1.0
        return head.estimated_tokens + max(0, int((trigger - 1 - fixed) * scale))

    def _standin(self, focus: str | None, limits: Limits[EngineSettings]
                 ) -> Callable[[], Level]:
        """The floor, bound when a summarizer fails (rarely: not before)."""
        return lambda: standin(LadderContext(limits.settings, limits.thresholds, focus=focus),
                               self.ladder)

    def _hold(self, trigger: Trigger, tokens: int, threshold: int, limits: Thresholds
              ) -> Decision | None:
        """Why an automatic path must not run now (off, or under its trigger)."""
        if not limits.auto_compact_enabled:
            return self._quiet(trigger, tokens, threshold, texts.AUTO_IS_OFF)
        if tokens < threshold:
            return self._quiet(trigger, tokens, threshold, texts.UNDER.format(trigger=trigger))
        return None

    def _apply(self, trigger: Trigger, history: History, limits: Limits[EngineSettings],
               before: int, focus: str | None, levels: list[Level]) -> Decision:
        """Run `levels` (a progress line for each level that acts); clear the line when done."""
        try:
            return self._attempt(trigger, history, limits, before, focus, levels)
        finally:
            self.events.emit(Status(""))

    def _attempt(self, trigger: Trigger, history: History, snapshot: Limits[EngineSettings],
                 before: int, focus: str | None, levels: list[Level]) -> Decision:
        """Run `levels`; swap the result in only if it is valid (and report if smaller)."""
        limits = snapshot.thresholds
        threshold = limits.midloop if trigger == "midloop" else limits.auto_compact
        self.events.emit(CompactionStarted(trigger, before, threshold, focus))
        attempt = Attempt(trigger, before, threshold, focus)
        original, counts = history.messages, history.token_counts()
        try:
            target = limits.auto_compact - 1
            if trigger == "auto":  # each compaction rewrites the cached prompt: it must
                # free enough (down to the compact target) that the next one is far off
                target = round(limits.auto_compact * snapshot.settings.compact_target_ratio)
            work = run_ladder(trigger, history, levels, attempt, fits_under=limits.auto_compact,
                              target=target, standin=self._standin(focus, snapshot),
                              status=self.events.emit)
            if attempt.levels:  # only after a rewrite: refreshing in place would edit bytes
                # already cached (the notebook state block)
                work = self.questions.refresh(work, snapshot)
            check_result(original, work, history)
        except CompactionFailed as failure:
            attempt.reasons.append(failure.reason)
            return self._finish(attempt, "failed", before, snapshot)
        except INTERRUPTS:
            raise  # the history is untouched: the levels ran on a copy
        except BaseException as error:  # a bug, a bad level result: never lose the history
            attempt.reasons.append(f"{type(error).__name__}: {error_text(error)}")
            return self._finish(attempt, "failed", before, snapshot)
        if not attempt.levels:  # a no-op is never a success; at the turn boundary it fails
            if attempt.exhausted:  # nothing is left to fold but the latest round: no failure
                attempt.reasons.append(texts.LATEST_OVER)
                return self._finish(attempt, "none", before, snapshot)
            if self.breaker_open and trigger in ("auto", "midloop"):
                # no model level ran, so nothing failed: L1 alone had nothing to clear
                attempt.reasons.append(texts.BREAKER_SKIP.format(failures=self._failures))
                return self._finish(attempt, "skipped", before, snapshot)
            return self._finish(attempt, "failed" if trigger in ("auto", "overflow") else "none",
                                before, snapshot)
        attempt.record(left_view=view_change(original, work, counts).text())
        self.events.emit(Rewriting(work))  # the archive writes it first (write-ahead)
        history.replace(work)
        undo = (original, history.generation, len(history))
        after = self.count(history, snapshot)
        action: Action = "compacted"
        if after >= before:
            attempt.reasons.append(texts.NO_REDUCTION)
            action = "failed"
        elif trigger != "overflow" and after >= limits.auto_compact:
            attempt.reasons.append(texts.STILL_OVER.format(
                tokens=figures.tokens(after), trigger=figures.count(limits.auto_compact)))
            if attempt.exhausted:  # all but the latest round is folded: as far as it goes
                attempt.reasons.append(texts.LATEST_OVER)
            else:
                action = "failed"
        decision = self._finish(attempt, action, after, snapshot, swapped=True)
        self._undo = (*undo, decision)
        return decision

    def _quiet(self, trigger: Trigger, tokens: int, threshold: int, reason: str) -> Decision:
        """A decision that nothing ran (off, or under the trigger): through an `Attempt` like
        every other decision, so a field added to `Decision` cannot be missed here."""
        attempt = Attempt(trigger, tokens, threshold, None, reasons=[reason])
        return attempt.decision("none", tokens, swapped=False, failures=self._failures,
                                breaker_open=self.breaker_open)

    def _finish(self, attempt: Attempt, action: Action, after: int,
                limits: Limits[EngineSettings], *, swapped: bool = False) -> Decision:
        # A degraded success (the summarizer failed, the floor stood in) counts as a failure.
        if action == "compacted" and not attempt.degraded:
            if not attempt.holds_breaker:
                self._failures = 0
        elif action == "failed" or attempt.degraded:
            self._failures += 1
        decision = attempt.decision(action, after, swapped=swapped, failures=self._failures,
                                    breaker_open=self.breaker_open)
        self.decisions.append(decision)
        self.events.emit(Compacted(decision, limits))
        return decision
