"""`LadderContext`: what the ladder's rows read their options from for one compaction —
the settings, the thresholds, the summarizer and its window, the focus, a target, the
limits the provider stated, the room an automatic compaction must fit in."""

from __future__ import annotations

from dataclasses import dataclass

from ._settings import EngineSettings
from ._thresholds import Thresholds
from .compaction import Summarizer, floor_budget
from .compaction._ptl import TokenLimits


@dataclass(frozen=True)
class LadderContext:
    """What a row's options are read from, for one compaction."""

    settings: EngineSettings
    limits: Thresholds
    summarize: Summarizer | None = None
    summarizer_window: int | None = None
    focus: str | None = None
    target_tokens: int | None = None
    overflow: TokenLimits | None = None  # (actual, limit) from the provider's error
    room_tokens: int | None = None  # what the messages may take to fit under the trigger

    @property
    def floor_tokens(self) -> int:
        return floor_budget(self.limits.auto_compact)
