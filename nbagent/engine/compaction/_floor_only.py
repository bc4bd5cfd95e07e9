"""The floor level: compaction with no model call. Old rounds fold into a memory block of
what code keeps (the user's words, names, results, error lines) with the recent tail
verbatim; when there is too little to fold, the whole conversation's floor (L3's form).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._common import LevelResult, Message
from ._memory import session_memory_compact
from ._summary import full_compact


def _no_summary(messages: list[Message]) -> str:
    return ""


def floor_only(
    messages: Sequence[Message],
    *,
    focus: str | None = None,
    tail_min_tokens: int = 10_000,
    tail_max_tokens: int = 40_000,
    tail_min_messages: int = 5,
    min_fold_tokens: int = 0,
    memory_max_tokens: int | None = None,
    floor_tokens_budget: int | None = None,
    counts: Sequence[int] | None = None,
) -> LevelResult:
    """The deterministic floor alone: `session_memory_compact` with no summarizer, or,
    when that has too little to fold, `full_compact` with an empty summary.

    Chosen on purpose (no summarizer) it is not degraded; the controller marks the
    attempt degraded when it stands in for a summarizer that failed.
    """
    result = session_memory_compact(
        messages, None, focus=focus, tail_min_tokens=tail_min_tokens,
        tail_max_tokens=tail_max_tokens, tail_min_messages=tail_min_messages,
        min_fold_tokens=min_fold_tokens, memory_max_tokens=memory_max_tokens,
        floor_tokens_budget=floor_tokens_budget, counts=counts,
    )
    if not result.changed:
        result = full_compact(messages, _no_summary, focus, counts=counts,
                              floor_tokens_budget=floor_tokens_budget)
    result.summary_calls = 0  # the stand-in summarizer is not a model call
    result.degraded = False
    if result.changed:
        result.reason = f"kept the deterministic floor (no model call): {result.reason}"
    return result
