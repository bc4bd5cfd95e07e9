"""`LadderContext`: what the ladder's rows read their options from for one compaction —
the settings, the thresholds, the summarizer and its window, the focus, a target, the
provider's error."""

from __future__ import annotations

from dataclasses import dataclass

from ._settings import EngineSettings
from ._thresholds import Thresholds
from .compaction import Summarizer, floor_budget


@dataclass(frozen=True)
class LadderContext:
    """What a row's options are read from, for one compaction."""

    settings: EngineSettings
    limits: Thresholds
    summarize: Summarizer | None = None
    summarizer_window: int | None = None
    focus: str | None = None
    target_tokens: int | None = None
    error: BaseException | str | None = None

    @property
    def floor_tokens(self) -> int:
        return floor_budget(self.limits.auto_compact)
