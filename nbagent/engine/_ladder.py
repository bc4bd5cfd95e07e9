"""The compaction policy as data: `levels_for` returns the list of levels to run for a
trigger, each a named `list → list` function, so the ladder can be printed, tested and
changed without reading the controller. The controller runs the list and keeps the state.

    auto      L1 snip → L2 memory → L3 summary (only if L2 could not run); L2 is
              skipped once the history is at or under the compact target
              (`compact_target_ratio` of the trigger), the fallbacks once it is under
              the trigger: a snip that lands just under the trigger does not end it
    manual    the same, always past L1
              (with no summarizer, or the breaker open for auto: L1 → floor)
    midloop   L1 snip to the mid-loop target (or the auto ladder, if configured)
    overflow  L4: drop the oldest whole rounds to fit the provider's stated limit

With the circuit breaker open the levels that call a model are left out of the
automatic ladders; the deterministic ones (L1, the floor, L4) always run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._decision import Trigger
from ._settings import Settings
from ._thresholds import Thresholds
from .compaction import (
    LevelResult,
    Summarizer,
    floor_budget,
    full_compact,
    ptl_fallback,
    session_memory_compact,
    snip_old_tools,
)

Message = dict[str, Any]


@dataclass(frozen=True)
class Level:
    """One rung: `run` maps a message list to a `LevelResult`.

    `calls_model`: it needs the summarizer (left out while the breaker is open).
    `fallback`: it runs only when the model level before it changed nothing.
    `holds_breaker`: it stands in for the summarizer while the breaker is open, so its
    success is no evidence the summarizer works: the breaker stays as it is.
    """

    name: str
    run: Callable[[list[Message], list[int] | None], LevelResult]
    calls_model: bool = False
    fallback: bool = False
    holds_breaker: bool = False

    def __call__(self, messages: list[Message], counts: list[int] | None = None) -> LevelResult:
        """Run on `messages`; `counts` (one token count per message) saves re-counting."""
        return self.run(messages, counts)


def _no_summary(messages: list[Message]) -> str:
    return ""


def snip_level(settings: Settings, limits: Thresholds, target_tokens: int | None = None) -> Level:
    return Level("L1 snip", lambda messages, counts: snip_old_tools(
        messages,
        keep_recent_turns=settings.keep_recent_turns,
        target_tokens=target_tokens,
        min_chars=settings.snip_min_chars,
        min_free_tokens=limits.scaled(settings.snip_batch_tokens),
        counts=counts,
    ))


def _memory(messages: list[Message], counts: list[int] | None, summarize: Summarizer | None,
            settings: Settings, limits: Thresholds, focus: str | None,
            summarizer_window: int | None) -> LevelResult:
    return session_memory_compact(
        messages,
        summarize,
        focus=focus,
        tail_min_tokens=limits.scaled(settings.memory_tail_min_tokens),
        tail_max_tokens=limits.scaled(settings.memory_tail_max_tokens),
        tail_min_messages=settings.memory_tail_min_messages,
        min_fold_tokens=limits.scaled(settings.memory_min_fold_tokens),
        memory_max_tokens=limits.scaled(settings.memory_max_tokens),
        max_input_tokens=summarizer_window,
        floor_tokens_budget=floor_budget(limits.auto_compact),
        counts=counts,
    )


def floor_level(settings: Settings, limits: Thresholds, focus: str | None) -> Level:
    """The deterministic floor alone (no model call): old rounds folded into a memory block
    of what code can keep (the user's words, names, error lines) with the recent tail
    verbatim; when there is too little to fold, the whole conversation's floor (L3's).

    Chosen on purpose (no summarizer) it is not degraded; the controller marks it
    degraded when it stands in for a summarizer that failed.
    """

    def run(messages: list[Message], counts: list[int] | None) -> LevelResult:
        result = _memory(messages, counts, None, settings, limits, focus, None)
        if not result.changed:
            result = full_compact(messages, _no_summary, focus, counts=counts,
                                  floor_tokens_budget=floor_budget(limits.auto_compact))
        result.summary_calls = 0  # the stand-in summarizer is not a model call
        result.degraded = False
        if result.changed:
            result.reason = f"kept the deterministic floor (no model call): {result.reason}"
        return result

    return Level("L3 floor", run)


def levels_for(
    trigger: Trigger,
    *,
    settings: Settings,
    limits: Thresholds,
    summarize: Summarizer | None,
    summarizer_window: int | None = None,
    focus: str | None = None,
    breaker_open: bool = False,
    target_tokens: int | None = None,
    error: BaseException | str | None = None,
) -> list[Level]:
    """The levels to run, in order, for `trigger` (see the module docstring)."""
    budget = floor_budget(limits.auto_compact)
    if trigger == "overflow":
        return [Level("L4 overflow", lambda messages, counts: ptl_fallback(
            messages, error, floor_tokens_budget=budget, counts=counts))]
    if trigger == "midloop" and not settings.midloop_full_compact:
        return [snip_level(settings, limits, target_tokens)]
    ladder = [snip_level(settings, limits)]
    models_allowed = summarize is not None and (trigger == "manual" or not breaker_open)
    if models_allowed and summarize is not None:
        ladder += [
            Level("L2 memory", lambda messages, counts: _memory(
                messages, counts, summarize, settings, limits, focus, summarizer_window,
            ), calls_model=True),
            Level("L3 summary", lambda messages, counts: full_compact(
                messages, summarize, focus, max_input_tokens=summarizer_window,
                floor_tokens_budget=budget, counts=counts,
            ), calls_model=True, fallback=True),
        ]
    else:  # no summarizer, or the breaker is open: the deterministic floor stands in
        floor = floor_level(settings, limits, focus)
        ladder.append(Level(floor.name, floor.run, holds_breaker=summarize is not None))
    return ladder
