"""`TokenTracker`: how many tokens the next request will occupy, cheaply.

Context size = the last real usage a provider reported + a calibrated estimate
of everything appended since. Real usage also recalibrates the estimator per
model. A usage recorded before the history was rewritten (compacted) is stale
and never reused: the tracker falls back to the calibrated estimate.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._history import History
from ._tokens import REPLY_PRIMING, Usage, estimate_message_tokens, estimate_tools_tokens

_MIN_CALIBRATION_TOKENS = 50  # smaller requests are too noisy to learn a ratio from
_RATIO_BOUNDS = (0.4, 3.0)


@dataclass(frozen=True)
class _Anchor:
    history: weakref.ref[History]
    model: str
    generation: int
    covered: int  # messages the usage covered
    estimate: int  # our raw estimate of that request (history part + tools)
    real: int  # what the provider said it occupied


class TokenTracker:
    """Tracks one session's context size against real provider usage.

    Every method is O(1) in the history length (plus the tools and the pending
    messages passed in).
    """

    def __init__(self) -> None:
        self._ratios: dict[str, float] = {}
        self._anchor: _Anchor | None = None
        self._tools_key: tuple[int, ...] = ()
        self._tools_tokens = 0

    @property
    def last_usage(self) -> int | None:
        """The context tokens the provider reported for the last response, if any."""
        return self._anchor.real if self._anchor is not None else None

    def ratio(self, model: str) -> float:
        """Real tokens per estimated token for `model`, learnt from usage (1.0 until then)."""
        return self._ratios.get(model, 1.0)

    def _tools_estimate(self, tools: Sequence[Mapping[str, Any]]) -> int:
        key = tuple(map(id, tools))
        if key != self._tools_key:
            self._tools_key, self._tools_tokens = key, estimate_tools_tokens(tools)
        return self._tools_tokens

    def _history_estimate(self, history: History, covered: int) -> int:
        after = sum(history.message_tokens(i) for i in range(covered, len(history)))
        return history.estimated_tokens - after

    def record_usage(
        self,
        history: History,
        usage: Usage,
        *,
        model: str,
        tools: Sequence[Mapping[str, Any]] = (),
        covered: int | None = None,
    ) -> None:
        """Record a response's real usage against the messages it covered.

        `covered` is how many messages of `history` were sent (default: all of
        them, i.e. call this before appending the reply).
        """
        covered = len(history) if covered is None else covered
        estimate = (
            self._history_estimate(history, covered) + self._tools_estimate(tools) + REPLY_PRIMING
        )
        real = usage.context_tokens
        if real <= 0:
            return
        self._anchor = _Anchor(
            weakref.ref(history), model, history.generation, covered, estimate, real
        )
        if estimate >= _MIN_CALIBRATION_TOKENS:
            observed = min(max(real / estimate, _RATIO_BOUNDS[0]), _RATIO_BOUNDS[1])
            previous = self._ratios.get(model)
            self._ratios[model] = observed if previous is None else (previous + observed) / 2

    def count(
        self,
        history: History,
        *,
        model: str,
        tools: Sequence[Mapping[str, Any]] = (),
        pending: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Tokens the next request would occupy: history, tool schemas and pending turn."""
        ratio = self.ratio(model)
        extra = sum(estimate_message_tokens(message) for message in pending)
        estimate = history.estimated_tokens + self._tools_estimate(tools) + REPLY_PRIMING
        anchor = self._anchor
        if (
            anchor is not None
            and anchor.history() is history
            and anchor.model == model
            and anchor.generation == history.generation
            and anchor.covered <= len(history)
        ):
            appended = estimate - anchor.estimate
            return max(0, anchor.real + round(ratio * (appended + extra)))
        return round(ratio * (estimate + extra))
