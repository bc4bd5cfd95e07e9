"""`ModelQuestions`: the one object a controller asks about the model whose window it
keeps — the settings, the window, how many tokens a history occupies, the summarizer,
and the block to refresh after a compaction. The agent answers them for each session;
`standalone` answers them for a controller used on its own. A summarizer may state what
one of its calls costs (`SummaryCost`, carried by a `CostedSummarizer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ._history import History
from ._settings import EngineSettings
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


class ModelQuestions(Protocol):
    """What a `CompactionController` asks, each time it needs the answer."""

    def settings(self) -> EngineSettings: ...

    def window(self) -> WindowInfo: ...

    def count(self, history: History) -> int: ...

    def summarizer(self) -> tuple[Summarizer | None, int | None]:
        """The summarizer (None: deterministic compaction only) and its input window."""
        ...

    def refresh(self, messages: list[Message]) -> list[Message]:
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

    def settings(self) -> EngineSettings:
        return self.fixed_settings if self.fixed_settings is not None else EngineSettings.from_env()

    def window(self) -> WindowInfo:
        if isinstance(self.window_spec, WindowInfo):
            return self.window_spec
        return resolve_window(self.window_spec, settings=self.settings())

    def count(self, history: History) -> int:
        tracker = self.tracker if self.tracker is not None else TokenTracker()
        return tracker.count(history, model=self.window().model)

    def summarizer(self) -> tuple[Summarizer | None, int | None]:
        return self.summarize, self.summarizer_window

    def refresh(self, messages: list[Message]) -> list[Message]:
        return messages
