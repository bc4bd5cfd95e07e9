"""`ModelQuestions`: the one object a controller asks about the model whose window it
keeps — its limits (the settings, the window and the thresholds, in one snapshot), how
many tokens a history occupies, the summarizer, and the block to refresh after a
compaction. The agent answers them for each session;
`standalone` answers them for a controller used on its own. A summarizer may state what
one of its calls costs (`SummaryCost`, carried by a `CostedSummarizer`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ._history import History
from ._settings import EngineSettings
from ._thresholds import Limits
from ._tracker import TokenTracker
from ._window import WindowInfo, resolve_window
from .compaction import Summarizer, SummaryReply

Message = dict[str, Any]


@dataclass(frozen=True)
class SummaryCost:
    """What one summarizer call costs, as the model that writes the summaries states it.

    `min_saving`: the least share of the window a call must free to be made (0: every
    call that has something to fold is made); below it the deterministic floor stands in.
    `max_calls`: at most this many summarizer calls in one compaction (no retry and no
    merge call past it; None: no cap). `output_tokens`: the most one summary writes (it
    stays in the window, so it is taken off what a call frees).
    """

    min_saving: float = 0.0
    max_calls: int | None = None
    output_tokens: int = 0


FREE = SummaryCost()  # a summarizer that states nothing: calls are made as they always were


@dataclass(frozen=True)
class CostedSummarizer:
    """A summarizer with the cost its model states (`summary_cost` reads it)."""

    summarize: Summarizer
    summary_cost: SummaryCost

    def __call__(self, messages: list[Message], /) -> str | SummaryReply:
        return self.summarize(messages)


def summary_cost(summarize: Summarizer | None) -> SummaryCost:
    """The cost `summarize` states (`FREE` for a plain callable or none)."""
    cost = getattr(summarize, "summary_cost", None)
    return cost if isinstance(cost, SummaryCost) else FREE


S = TypeVar("S", bound=EngineSettings)


class ModelQuestions(Protocol[S]):
    """What a `CompactionController` asks. Its limits once per entry point (a compaction,
    a reading of the state), unless the caller passes the snapshot it took. `S`: the
    settings its snapshots carry (the agent's carry its whole `Settings`)."""

    def limits(self) -> Limits[S]:
        """The settings and the window now, with their thresholds: one snapshot."""
        ...

    def count(self, history: History, limits: Limits[S] | None = None) -> int:
        """Tokens the next request would occupy, under `limits` (by default the limits
        now: what is offered with each request may depend on the window)."""
        ...

    def summarizer(self, limits: Limits[S] | None = None
                   ) -> tuple[Summarizer | None, int | None]:
        """The summarizer (None: deterministic compaction only) and its input window,
        under `limits` (by default the limits now)."""
        ...

    def refresh(self, messages: list[Message], limits: Limits[S] | None = None
                ) -> list[Message]:
        """The history after a compaction, with any block that must be fresh replaced."""
        ...


@dataclass
class Standalone:
    """Fixed answers: a window (or a model name resolved from the built-in table), fixed
    settings (or the environment's at each use), one summarizer, the tracker's count."""

    summarize: Summarizer | None = None
    window_spec: WindowInfo | str = "default"
    summarizer_window: int | None = None
    fixed_settings: EngineSettings | None = None
    tracker: TokenTracker | None = None
    _last: Limits[EngineSettings] | None = field(default=None, init=False, repr=False)

    def settings(self) -> EngineSettings:
        return self.fixed_settings if self.fixed_settings is not None else EngineSettings.from_env()

    def window(self) -> WindowInfo:
        if isinstance(self.window_spec, WindowInfo):
            return self.window_spec
        return resolve_window(self.window_spec, settings=self.settings())

    def limits(self) -> Limits[EngineSettings]:
        window, settings = self.window(), self.settings()
        last = self._last  # the same snapshot while the window and the settings are
        if last is None or last.window is not window or last.settings is not settings:
            last = self._last = Limits.of(window, settings)
        return last

    def count(self, history: History, limits: Limits[EngineSettings] | None = None) -> int:
        tracker = self.tracker if self.tracker is not None else TokenTracker()
        window = limits.window if limits is not None else self.window()
        return tracker.count(history, model=window.model)

    def summarizer(self, limits: Limits[EngineSettings] | None = None
                   ) -> tuple[Summarizer | None, int | None]:
        return self.summarize, self.summarizer_window

    def refresh(self, messages: list[Message], limits: Limits[EngineSettings] | None = None
                ) -> list[Message]:
        return messages
