"""The one threshold function. Every trigger (auto-compact, mid-loop), every meter
level (warning, error, blocking) and the "N% context left" figure come from
`thresholds()` and `context_state()`, so the controller, the widget and the
magics can never disagree.

At a 200,000-token window the buffers are Claude Code's: output reserve up to
20,000, auto-compact 13,000 below the effective window. Smaller windows scale
every reserve and buffer down in proportion, so an 8K or 2K local model gets
sane, ordered thresholds instead of negative ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from ._decision import MAX_FAILURES
from ._settings import EngineSettings
from ._texts import AUTO_OFF, BREAKER_OPEN
from ._window import ModelInfoLookup, WindowInfo, WindowSource, resolve_window

Level = Literal["ok", "warning", "error", "compact", "blocking"]


@dataclass(frozen=True)
class MeterLevel:
    """One level of the context meter: its name, the words it shows, the threshold
    (a `Thresholds` field) at which it starts ("" for the lowest), and whether it is
    reached only while automatic compaction is armed (`armed_only`: a level that says
    compaction is coming would be false when none is), and its words while none is coming
    (`unarmed_words`; None: the same words)."""

    name: Level
    words: str
    starts_at: str
    armed_only: bool = False
    unarmed_words: str | None = None


METER_LEVELS: tuple[MeterLevel, ...] = (  # lowest first; `context_state` reads it
    MeterLevel("ok", "ok", ""),
    MeterLevel("warning", "warning", "warning"),
    MeterLevel("error", "compacting soon", "error", unarmed_words="nearly full"),
    MeterLevel("compact", "compacting", "auto_compact", armed_only=True),
    # past the blocking limit a chat stops before sending — unless the automatic compaction
    # that runs first at the turn's start brings it back under (so "blocked" only when none
    # is coming: a demo's and a meter's "blocked" between two turns was not true)
    MeterLevel("blocking", "compacting at the next chat", "blocking", unarmed_words="blocked"),
)

REFERENCE_WINDOW = 200_000
OUTPUT_RESERVE_CAP = 20_000
AUTO_COMPACT_BUFFER = 13_000
BLOCKING_BUFFER = 3_000
WARNING_BUFFER = 20_000  # below the auto-compact trigger
WARNING_SHARE = 0.25  # ...or a quarter of the trigger, whichever is more
ERROR_BUFFER = 10_000
MIDLOOP_BUFFER = 5_000


@dataclass(frozen=True)
class Thresholds:
    """Token counts at which each level starts, for one model.

    Ordered: warning < error < midloop < auto_compact < blocking <= effective_window.
    """

    window: WindowInfo
    context_window: int  # the raw window, capped by NBAGENT_AUTO_COMPACT_WINDOW
    output_reserve: int
    effective_window: int
    auto_compact: int
    midloop: int
    warning: int
    error: int
    blocking: int
    auto_compact_enabled: bool

    @property
    def scale(self) -> float:
        """How this window compares with the 200,000-token reference (at most 1)."""
        return min(1.0, self.context_window / REFERENCE_WINDOW)

    def scaled(self, tokens: int) -> int:
        """A size given for a 200,000-token window, scaled down to this one."""
        return round(tokens * self.scale)

    @staticmethod
    def words(field: str) -> str:
        """A threshold field as people read it (the notebook's list of thresholds and the
        header of docs/configuration.md's table): "auto-compact", "reserve", "warning"."""
        return _FIELD_WORDS.get(field, field.replace("_", " "))


# The fields whose words are not their names with "_" as a space (`Thresholds.words`)
_FIELD_WORDS = {"output_reserve": "reserve", "effective_window": "effective",
                "auto_compact": "auto-compact", "midloop": "mid-loop"}


@dataclass(frozen=True)
class ContextState:
    """How full the context is, as the meter and the controller see it."""

    tokens: int
    percent_left: float
    level: Level
    auto_compact_armed: bool
    window_source: WindowSource
    thresholds: Thresholds
    breaker_open: bool = False

    @property
    def base(self) -> int:
        """What `percent_left` is of: the auto-compact trigger while automatic compaction is
        armed, else the effective window (the window less the output reserve)."""
        return _base(self.thresholds, self.auto_compact_armed)

    @property
    def shown_level(self) -> Level:
        """The level a meter shows: `level`, raised to "warning" while the circuit breaker
        is open (summaries failing is worth one)."""
        return "warning" if self.level == "ok" and self.breaker_open else self.level

    @property
    def level_words(self) -> str:
        """The shown level in the meter's words (`METER_LEVELS`): "compacting soon" rather
        than "error" — and the row's `unarmed_words` when no automatic compaction is coming."""
        row = next(m for m in METER_LEVELS if m.name == self.shown_level)
        return row.words if self.auto_compact_armed else row.unarmed_words or row.words

    def at_least(self, tokens: int) -> ContextState:
        """This state with `tokens` where that is more (the percent left and the level read
        again from the same thresholds): what a meter shows while a turn holds its highest
        figure (`Session.reading`)."""
        if tokens <= self.tokens:
            return self
        return context_state(self.thresholds.window, tokens, breaker_open=self.breaker_open,
                             limits=self.thresholds)

    @property
    def compaction_note(self) -> str | None:
        """Why automatic compaction is not armed, in words (None when it is)."""
        if not self.thresholds.auto_compact_enabled:
            return AUTO_OFF
        if self.breaker_open:
            return BREAKER_OPEN.format(failures=MAX_FAILURES)
        return None


def thresholds(
    window: WindowInfo | str,
    *,
    settings: EngineSettings | None = None,
    model_info: ModelInfoLookup | None = None,
) -> Thresholds:
    """Every threshold for a resolved window (or a model name, resolved here without
    the model-info lookup unless one is given), under the current settings."""
    settings = EngineSettings.from_env() if settings is None else settings
    info = (resolve_window(window, settings=settings, model_info=model_info)
            if isinstance(window, str) else window)
    return _from_window(info, settings)


S = TypeVar("S", bound=EngineSettings, covariant=True)
T = TypeVar("T", bound=EngineSettings)


@dataclass(frozen=True)
class Limits(Generic[S]):
    """One snapshot of what bounds a history's requests: the settings, the window (and
    where it came from) and every threshold read from them. Taken once where work starts
    — a turn, a compaction, a meter reading — and passed down, so everything that one
    piece of work decides reads the same window; what changes the window on the way (a
    limit the server showed, another model, new settings) takes a new one, explicitly.
    The agent's snapshots carry its whole `Settings`."""

    settings: S
    thresholds: Thresholds

    @property
    def window(self) -> WindowInfo:
        return self.thresholds.window

    @staticmethod
    def of(window: WindowInfo, settings: T) -> Limits[T]:
        """The snapshot for a resolved `window` under `settings`."""
        return Limits(settings, _from_window(window, settings))


def _from_window(info: WindowInfo, settings: EngineSettings) -> Thresholds:
    window = info.raw_window
    if settings.auto_compact_window is not None:
        window = min(window, settings.auto_compact_window)
    scale = min(1.0, window / REFERENCE_WINDOW)

    def buffer(tokens: int, at_least: int = 1) -> int:
        return max(at_least, round(tokens * scale))

    reserve = buffer(OUTPUT_RESERVE_CAP, 0)
    if info.max_output is not None:
        reserve = min(reserve, info.max_output)
    effective = window - reserve
    blocking_gap = buffer(BLOCKING_BUFFER)
    auto = effective - buffer(AUTO_COMPACT_BUFFER, blocking_gap + 1)
    midloop_gap = buffer(MIDLOOP_BUFFER)
    error_gap = buffer(ERROR_BUFFER, midloop_gap + 1)
    # the warning starts with a quarter of the room before the trigger left, at least
    warning_gap = max(buffer(WARNING_BUFFER, error_gap + 1), round(WARNING_SHARE * auto))
    return Thresholds(
        window=info,
        context_window=window,
        output_reserve=reserve,
        effective_window=effective,
        auto_compact=max(0, auto),
        midloop=max(0, auto - midloop_gap),
        warning=max(0, auto - warning_gap),
        error=max(0, auto - error_gap),
        blocking=max(0, effective - blocking_gap),
        auto_compact_enabled=not settings.disable_compact,
    )


def context_state(
    model: WindowInfo | str,
    tokens: int,
    *,
    breaker_open: bool = False,
    settings: EngineSettings | None = None,
    model_info: ModelInfoLookup | None = None,
    limits: Thresholds | None = None,
) -> ContextState:
    """Where `tokens` of context stand for `model`: percent left, level, armed or not.

    Percent left is measured against the auto-compact trigger while automatic
    compaction is armed (enabled and the circuit breaker closed), else against
    the effective window. Pass `limits` to reuse thresholds already computed.
    """
    if limits is None:
        limits = thresholds(model, settings=settings, model_info=model_info)
    armed = limits.auto_compact_enabled and not breaker_open
    base = _base(limits, armed)
    percent_left = max(0.0, min(100.0, 100.0 * (base - tokens) / base)) if base > 0 else 0.0
    level: Level = METER_LEVELS[0].name
    for meter in METER_LEVELS[1:]:
        if (armed or not meter.armed_only) and tokens >= getattr(limits, meter.starts_at):
            level = meter.name
    return ContextState(tokens, percent_left, level, armed, limits.window.source, limits,
                        breaker_open)


def _base(limits: Thresholds, armed: bool) -> int:
    return limits.auto_compact if armed else limits.effective_window


THRESHOLD_COLUMNS = ("output_reserve", "effective_window", "auto_compact", "midloop", "warning",
                     "error", "blocking")


def threshold_rows(windows: tuple[tuple[str, int, int | None], ...],
                   settings: EngineSettings | None = None) -> list[str]:
    """Markdown rows of `THRESHOLD_COLUMNS` for (label, window, max output) cases, as
    docs/configuration.md prints them (a test checks the page against this)."""
    settings = EngineSettings() if settings is None else settings
    rows = []
    for label, window, max_output in windows:
        info = WindowInfo(label, window, "env", max_output, None if max_output is None else "env")
        limits = _from_window(info, settings)
        figures = " | ".join(f"{getattr(limits, column):,}" for column in THRESHOLD_COLUMNS)
        rows.append(f"| {label} | {window:,} | "
                    f"{'—' if max_output is None else f'{max_output:,}'} | {figures} |")
    return rows
