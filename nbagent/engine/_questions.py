"""`ModelQuestions`: the one object a controller asks about the model whose window it
keeps — the settings, the window, how many tokens a history occupies, the summarizer,
and the block to refresh after a compaction. A session answers them for its agent;
`standalone` answers them for a controller used on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ._history import History
from ._settings import EngineSettings
from ._tracker import TokenTracker
from ._window import WindowInfo, resolve_window
from .compaction import Summarizer

Message = dict[str, Any]


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
