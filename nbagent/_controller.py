"""`CompactionController`: the stateful object, one per chat session, that keeps a
history inside the model's window. It composes the pure levels of
`nbagent.compaction`, decides when each runs, swaps a result in only when it
validated, and holds the one circuit breaker that every path shares.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ._exceptions import NbagentError
from ._history import History, validate_messages
from ._settings import Settings
from ._thresholds import ContextState, Thresholds, context_state, thresholds
from ._tracker import TokenTracker
from ._window import ModelInfoLookup, _litellm_info
from .compaction import (
    CompactionFailed,
    LevelResult,
    Summarizer,
    full_compact,
    ptl_fallback,
    session_memory_compact,
    snip_old_tools,
)
from .compaction._common import add_costs

Trigger = Literal["auto", "midloop", "manual", "overflow"]
Action = Literal["none", "skipped", "compacted", "failed"]
MAX_FAILURES = 3


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


@dataclass
class _Attempt:
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
    started: float = field(default_factory=time.perf_counter)

    def spent(self, calls: int, cost: float | None) -> None:
        self.calls += calls
        self.cost = add_costs(self.cost, cost)


@dataclass(frozen=True)
class CompactionStarted:
    """Sent to `pre_compact` hooks before a compaction touches anything."""

    trigger: Trigger
    tokens: int
    threshold: int
    focus: str | None


TokenCounter = Callable[[History, str], int]

# A small, fast model of the same provider writes summaries when none is configured.
SMALL_MODELS = {
    "anthropic/": "anthropic/claude-haiku-4-5",
    "claude": "claude-haiku-4-5",
    "openai/": "openai/gpt-4o-mini",
    "gpt-": "gpt-4o-mini",
    "gemini/": "gemini/gemini-2.0-flash",
}


def compact_model_for(model: str, settings: Settings) -> str:
    """The summarizing model: the configured one, a small one of the same provider, or `model`."""
    if settings.compact_model:
        return settings.compact_model
    for prefix, small in SMALL_MODELS.items():
        if model.startswith(prefix):
            return small
    return model


class CompactionController:
    """Keeps one session's history inside its model's window.

        controller = CompactionController(summarize=my_summarizer)
        decision = controller.maybe_compact(history, model="anthropic/claude-sonnet-4-5")
        decision.action, decision.tokens_before, decision.tokens_after

    Args:
        summarize: the model seam that writes memories and summaries; by default
            the compaction model through nbagent's llm module.
        tracker: the session's token tracker (real usage + estimate).
        count: how many tokens a history occupies for a model; by default the
            tracker's count. The agent passes one that adds tool schemas.
        settings: fixed settings; by default read from the environment per call.
        summarizer_window: the summarizing model's input window, if known; else it is
            resolved from `summarizer_model` (the model behind `summarize`), if given.
    """

    def __init__(
        self,
        *,
        summarize: Summarizer | None = None,
        tracker: TokenTracker | None = None,
        count: TokenCounter | None = None,
        settings: Settings | None = None,
        summarizer_window: int | None = None,
        summarizer_model: str | None = None,
        model_info: ModelInfoLookup | None = _litellm_info,
    ) -> None:
        self.tracker = tracker if tracker is not None else TokenTracker()
        self._summarize = summarize
        self._count = count
        self._settings = settings
        self._summarizer_window = summarizer_window
        self._summarizer_model = summarizer_model
        self._model_info = model_info
        self._failures = 0
        self.pre_compact: list[Callable[[CompactionStarted], Any]] = []
        self.post_compact: list[Callable[[Decision], Any]] = []
        # told of a compaction's result before it is swapped in (the archive's write-ahead)
        self.before_rewrite: list[Callable[[list[dict[str, Any]]], Any]] = []
        self._undo: tuple[list[dict[str, Any]], int, int] | None = None
        # the latest decisions (the session archive keeps them all)
        self.decisions: deque[Decision] = deque(maxlen=100)

    # -- state ---------------------------------------------------------------------------

    def failure_count(self) -> int:
        """Consecutive failed compactions (a verified reduction resets it)."""
        return self._failures

    @property
    def breaker_open(self) -> bool:
        """After three consecutive failures automatic compaction stops until a success."""
        return self._failures >= MAX_FAILURES

    def reset_failures(self) -> None:
        self._failures = 0

    def undo(self, history: History) -> None:
        """Put back the history as it was before the last compaction, if nothing was added
        since; otherwise raise `NbagentError` saying why."""
        if self._undo is None:
            raise NbagentError("There is no compaction to undo in this session.")
        before, generation, length = self._undo
        if history.generation != generation or len(history) != length:
            added = len(history) - length
            raise NbagentError(
                "Cannot undo the last compaction: the conversation went on since "
                f"({added} new messages). Its full text stays in the session archive.")
        for write_ahead in self.before_rewrite:
            write_ahead(before)
        history.replace(before)
        self._undo = None

    def settings(self) -> Settings:
        return self._settings if self._settings is not None else Settings.from_env()

    def count(self, history: History, model: str) -> int:
        if self._count is not None:
            return self._count(history, model)
        return self.tracker.count(history, model=model)

    def thresholds(self, model: str) -> Thresholds:
        return thresholds(model, settings=self.settings(), model_info=self._model_info)

    def state(self, history: History, model: str) -> ContextState:
        """The context state (percent left, level, armed) of `history` right now."""
        return context_state(
            model,
            self.count(history, model),
            breaker_open=self.breaker_open,
            limits=self.thresholds(model),
        )

    # -- the four entry points -------------------------------------------------------------

    def maybe_compact(
        self, history: History, *, model: str, compact_model: str | None = None
    ) -> Decision:
        """At a turn boundary: compact when armed and at or over the auto-compact trigger."""
        limits = self.thresholds(model)
        tokens = self.count(history, model)
        held = self._hold("auto", tokens, limits.auto_compact, limits)
        if held is not None:
            return held
        return self._run("auto", history, model, limits, tokens, None, compact_model)

    def compact_now(
        self,
        history: History,
        *,
        model: str,
        focus: str | None = None,
        compact_model: str | None = None,
    ) -> Decision:
        """Compact on request (`%compact`): runs even with the breaker open; success closes it.

        L1 snip, then L2 session memory, or L3 full summary when L2 could not run.
        `focus` reaches the summarizer.
        """
        limits = self.thresholds(model)
        return self._run(
            "manual", history, model, limits, self.count(history, model), focus, compact_model
        )

    def on_tool_result(self, history: History, *, model: str) -> Decision:
        """Mid-loop, after a round of tool results: a budget-aware micro-snip when over
        the mid-loop trigger (or the full compaction, if `midloop_full_compact` is set).
        Pending tool calls are never touched.
        """
        settings = self.settings()
        limits = self.thresholds(model)
        tokens = self.count(history, model)
        held = self._hold("midloop", tokens, limits.midloop, limits)
        if held is not None:
            return held
        if settings.midloop_full_compact:
            return self._run("midloop", history, model, limits, tokens, None, None)
        target = settings.midloop_target_ratio * limits.auto_compact
        raw_target = round(history.estimated_tokens * target / max(tokens, 1))
        return self._apply(
            "midloop",
            history,
            model,
            limits,
            tokens,
            None,
            lambda messages: [
                (
                    "L1 snip",
                    snip_old_tools(
                        messages,
                        keep_recent_turns=settings.keep_recent_turns,
                        target_tokens=raw_target,
                        min_chars=settings.snip_min_chars,
                        min_free_tokens=limits.scaled(settings.snip_batch_tokens),
                    ),
                )
            ],
        )

    def handle_ptl_error(
        self, history: History, error: BaseException | str, *, model: str
    ) -> Decision:
        """After a provider said "prompt too long": drop the oldest rounds to fit (L4)."""
        limits = self.thresholds(model)
        tokens = self.count(history, model)
        return self._apply(
            "overflow",
            history,
            model,
            limits,
            tokens,
            None,
            lambda messages: [("L4 overflow", ptl_fallback(messages, error))],
        )

    # -- machinery -------------------------------------------------------------------------

    def _summarizer(self, model: str, compact_model: str | None) -> tuple[Summarizer, int | None]:
        if self._summarize is not None:
            window = self._summarizer_window
            if window is None and self._summarizer_model is not None:
                window = thresholds(
                    self._summarizer_model, settings=self.settings(), model_info=self._model_info
                ).effective_window
            return self._summarize, window
        from . import _llm

        name = compact_model or compact_model_for(model, self.settings())
        window = self._summarizer_window
        if window is None:
            window = thresholds(
                name, settings=self.settings(), model_info=self._model_info
            ).effective_window
        return _llm.summarizer(name), window

    def _run(
        self,
        trigger: Trigger,
        history: History,
        model: str,
        limits: Thresholds,
        tokens: int,
        focus: str | None,
        compact_model: str | None,
    ) -> Decision:
        settings = self.settings()
        summarize, window = self._summarizer(model, compact_model)

        def ladder(messages: list[dict[str, Any]]) -> list[tuple[str, LevelResult]]:
            steps = [
                (
                    "L1 snip",
                    snip_old_tools(
                        messages,
                        keep_recent_turns=settings.keep_recent_turns,
                        min_chars=settings.snip_min_chars,
                        min_free_tokens=limits.scaled(settings.snip_batch_tokens),
                    ),
                )
            ]
            current = steps[-1][1] if steps[-1][1].changed else messages
            if trigger != "manual" and self._projected(history, current, tokens) < (
                    limits.auto_compact):
                return steps
            memory = session_memory_compact(
                current,
                summarize,
                focus=focus,
                tail_min_tokens=limits.scaled(settings.memory_tail_min_tokens),
                tail_max_tokens=limits.scaled(settings.memory_tail_max_tokens),
                tail_min_messages=settings.memory_tail_min_messages,
                min_fold_tokens=limits.scaled(settings.memory_min_fold_tokens),
                memory_max_tokens=limits.scaled(settings.memory_max_tokens),
                max_input_tokens=window,
            )
            steps.append(("L2 memory", memory))
            if not memory.changed:
                steps.append(
                    ("L3 summary", full_compact(current, summarize, focus, max_input_tokens=window))
                )
            return steps

        return self._apply(trigger, history, model, limits, tokens, focus, ladder)

    @staticmethod
    def _projected(history: History, messages: Sequence[dict[str, Any]], tokens: int) -> int:
        """`tokens` (the real count of `history`) scaled by how much `messages` shrank it:
        one consistent measure, so an unchanged list never looks smaller."""
        return round(tokens * history.copy_with(messages).estimated_tokens
                     / max(1, history.estimated_tokens))

    def _apply(
        self,
        trigger: Trigger,
        history: History,
        model: str,
        limits: Thresholds,
        before: int,
        focus: str | None,
        ladder: Callable[[list[dict[str, Any]]], list[tuple[str, LevelResult]]],
    ) -> Decision:
        """Run `ladder` on a copy; swap the result in only if it is valid and smaller."""
        threshold = limits.midloop if trigger == "midloop" else limits.auto_compact
        for hook in self.pre_compact:
            hook(CompactionStarted(trigger, before, threshold, focus))
        attempt = _Attempt(trigger, before, threshold, focus)
        original = history.messages
        work: list[dict[str, Any]] = original
        try:
            for name, result in ladder(original):
                attempt.spent(result.summary_calls, result.cost)
                attempt.reasons.append(f"{name}: {result.reason}")
                if result.changed:
                    attempt.levels.append(name)
                    attempt.degraded |= result.degraded
                    work = list(result)
                    attempt.summary = result.summary or attempt.summary
            self._check(original, work, history)
        except CompactionFailed as failure:
            attempt.spent(failure.summary_calls, failure.cost)
            attempt.reasons.append(failure.reason)
            return self._finish(attempt, "failed", before)
        except Exception as error:  # a bug or a bad level result: never lose the history
            attempt.reasons.append(f"{type(error).__name__}: {error}")
            return self._finish(attempt, "failed", before)
        if not attempt.levels:  # a no-op is never a success; at the turn boundary it fails
            return self._finish(attempt, "failed" if trigger in ("auto", "overflow") else "none",
                                before)
        for write_ahead in self.before_rewrite:
            write_ahead(work)
        history.replace(work)
        self._undo = (original, history.generation, len(history))
        after = self.count(history, model)
        if after >= limits.auto_compact:
            attempt.reasons.append(f"still {after:,} tokens, over the {limits.auto_compact:,} "
                                   "trigger")
            return self._finish(attempt, "failed", after, swapped=True)
        if after >= before:
            attempt.reasons.append("no reduction")
            return self._finish(attempt, "failed", after, swapped=True)
        return self._finish(attempt, "compacted", after, swapped=True)

    @staticmethod
    def _check(
        original: list[dict[str, Any]], work: list[dict[str, Any]], history: History
    ) -> None:
        """A result must be a valid history with the same system prompt and pending calls."""
        pending = validate_messages(work)
        if pending != history.pending_tool_calls:
            raise CompactionFailed("the result lost a pending tool call")
        preamble = history.preamble.stop
        if work[:preamble] != original[:preamble]:
            raise CompactionFailed("the result changed the system prompt")

    def _hold(self, trigger: Trigger, tokens: int, threshold: int, limits: Thresholds
              ) -> Decision | None:
        """Why an automatic path must not run now (off, breaker open, under its trigger)."""
        if not limits.auto_compact_enabled:
            return self._quiet(trigger, tokens, threshold, "automatic compaction is off")
        if self.breaker_open:
            return self._quiet(trigger, tokens, threshold,
                               f"circuit breaker open after {self._failures} failures", "skipped")
        if tokens < threshold:
            return self._quiet(trigger, tokens, threshold, f"under the {trigger} trigger")
        return None

    def _quiet(
        self, trigger: Trigger, tokens: int, threshold: int, reason: str, action: Action = "none"
    ) -> Decision:
        return Decision(
            action=action,
            trigger=trigger,
            levels=[],
            reason=reason,
            tokens_before=tokens,
            tokens_after=tokens,
            threshold=threshold,
            changed=False,
            failures=self._failures,
            breaker_open=self.breaker_open,
        )

    def _finish(self, attempt: _Attempt, action: Action, after: int, *, swapped: bool = False
                ) -> Decision:
        # A degraded success (e.g. the summary fell back to the floor) still counts as a failure.
        if action == "compacted" and not attempt.degraded:
            self._failures = 0
        elif action == "failed" or attempt.degraded:
            self._failures += 1
        changed = swapped  # the history was rewritten (a failure can still have shrunk it)
        decision = Decision(
            action=action, trigger=attempt.trigger, levels=attempt.levels,
            reason="; ".join(attempt.reasons), tokens_before=attempt.before, tokens_after=after,
            threshold=attempt.threshold, changed=changed, summary_calls=attempt.calls,
            duration_s=time.perf_counter() - attempt.started, cost=attempt.cost,
            failures=self._failures, breaker_open=self.breaker_open, focus=attempt.focus,
            summary=attempt.summary if changed else None,
        )
        self.decisions.append(decision)
        for hook in self.post_compact:
            hook(decision)
        return decision
