"""What a meter shows, computed once from a context state: the percent left and what it is
of, the level in words, the tokens, the trigger, the effective window and the window, the
last compaction (marked when undone), the cost and the cache share. Both meters (the
widget and the plain line) and `%context` read the same `MeterReading` and round with the
same `nbagent.text.percent`, so their figures and their names agree.

The one story: "N% context left until auto-compact" is the room left before the
auto-compact trigger, as a share of the trigger; with automatic compaction off (the
setting, or the circuit breaker open) it is "N% context left in the effective window"
(the window less the output reserve), as nothing compacts before that.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from nbagent import METER_LEVELS, Billing, ContextState, Decision
from nbagent.text import count, money, percent, tokens

from ._meter_assets import MARK, level_colour
from ._texts import notebook_words

LEVELS = tuple(level.name for level in METER_LEVELS)  # the engine's, lowest first
WORDS: dict[str, str] = {level.name: level.words for level in METER_LEVELS}


def billing_words(billing: Billing | None) -> str:
    """"62% of input read from cache" from `agent.billing()` ("" when nothing was sent)."""
    if billing is None or not billing.prompt_tokens:
        return ""
    return f"{percent(100 * billing.cache_read_share)} of input read from cache"


def compaction_text(decision: Decision) -> str:
    """"L2 memory: 6,900 → 1,200", and "(undone)" once it was undone (`Decision.words`)."""
    return decision.words(brief=True)


def last_compaction(agent: Any) -> str | None:
    """The agent's last compaction that changed the history, as the meter says it."""
    controller = getattr(agent, "controller", None)
    decisions = getattr(controller, "decisions", None) or []
    changed = [d for d in decisions if getattr(d, "changed", False)]
    return compaction_text(changed[-1]) if changed else None


@dataclass(frozen=True)
class MeterReading:
    """What both meters show, in words and numbers, computed once from a context state."""

    percent_left: float
    level: str  # one of LEVELS: the engine's level, raised to "warning" when space is low
    label: str  # the level in words
    note: str  # why automatic compaction is off ("" when it is armed)
    tokens: int
    threshold: int  # what percent_left is of: the trigger, or the effective window when off
    window: int
    window_source: str
    cost: float = 0.0
    last_compaction: str = ""
    cache: str = ""  # e.g. "62% of input read from cache"
    effective_window: int = 0  # the window less the output reserve

    @classmethod
    def of(cls, state: ContextState, *, cost: float = 0.0, last_compaction: str = "",
           cache: str = "") -> MeterReading:
        limits = state.thresholds
        note = "" if state.auto_compact_armed else _compaction_note(state)
        return cls(
            percent_left=state.percent_left,
            level=state.shown_level,  # raised to "warning" while the breaker is open
            label=state.level_words,
            note=note,
            tokens=state.tokens,
            threshold=state.base,
            window=limits.context_window,
            window_source=str(state.window_source),
            cost=cost,
            last_compaction=last_compaction,
            cache=cache,
            effective_window=limits.effective_window,
        )

    @property
    def armed(self) -> bool:
        """Whether automatic compaction is armed (then `threshold` is its trigger)."""
        return not self.note

    @property
    def headline(self) -> str:
        """"86% context left until auto-compact": the percentage and what it is of."""
        of = "until auto-compact" if self.armed else "in the effective window"
        return f"{percent(self.percent_left)} context left {of}"

    @property
    def status(self) -> str:
        """The level in words, with why auto-compaction is off when it is."""
        return f"{self.label} · {self.note}" if self.note else self.label

    @property
    def base_words(self) -> str:
        """The figure the percentage is of, named: "auto-compact at 7,148", or the effective
        window when automatic compaction is off."""
        if self.armed:
            return f"auto-compact at {count(self.threshold)}"
        return f"effective window {count(self.threshold)}"

    def _extras(self) -> list[str]:
        parts = []
        if self.last_compaction:
            parts.append(f"last compaction {self.last_compaction}")
        if self.cost:
            parts.append(money(self.cost))
        if self.cache:
            parts.append(self.cache)
        return parts

    @property
    def detail(self) -> str:
        """Every figure, each named once: tokens · auto-compact at · effective window ·
        window (where it came from) · last compaction · cost · cache share."""
        parts = [tokens(self.tokens), self.base_words]
        if self.armed:
            parts.append(f"effective window {count(self.effective_window)}")
        parts.append(f"window {count(self.window)} ({self.window_source})")
        return " · ".join(parts + self._extras())

    @property
    def short_detail(self) -> str:
        """What a chat cell's line shows beside the headline: the tokens and what the
        percentage is of (the rest is in its tooltip)."""
        return " · ".join([tokens(self.tokens), self.base_words, *self._extras()])

    def text(self) -> str:
        return f"nbagent: {self.headline} ({self.status}) · {self.detail}"

    def html(self, *, compact: bool = False) -> str:
        """The meter as self-contained HTML: inline styles from JupyterLab's theme
        variables with fallbacks, so it reads the same in a live notebook, nbviewer and
        GitHub. The bar fills with what is left, as its words say. `compact`: one row,
        the details in its tooltip."""
        left = max(0.0, min(100.0, self.percent_left))
        colour = level_colour(self.level)
        track = (
            '<span class="nbagent-meter-track" style="display:inline-block;width:120px;'
            "height:10px;box-sizing:border-box;border-radius:5px;overflow:hidden;"
            "background:var(--jp-layout-color3,#d0d0d0);border:1px solid "
            f'var(--jp-border-color1,#8a8a8a)"><span class="nbagent-meter-bar" '
            f'style="display:block;height:100%;width:{left:.1f}%;background:{colour}">'
            "</span></span>"
        )
        muted = "color:var(--jp-content-font-color2,#555555)"
        short = (
            f'<span class="nbagent-meter-detail" style="{muted}">'
            f"{html.escape(self.short_detail)}</span>" if compact else ""
        )
        row = (
            '<div class="nbagent-meter-row" style="display:flex;align-items:center;'
            f'flex-wrap:wrap;gap:2px 8px">{track}'
            f'<b class="nbagent-meter-text">{html.escape(self.headline)}</b>'
            f'<span class="nbagent-meter-level"><span class="nbagent-meter-mark" '
            f'style="color:{colour}">{MARK}</span> <span class="nbagent-meter-status">'
            f"{html.escape(self.status)}</span></span>{short}</div>"
        )
        detail = "" if compact else (
            f'<div class="nbagent-meter-detail" style="{muted}">{html.escape(self.detail)}</div>'
        )
        tooltip = f' title="{html.escape(self.detail)}"' if compact else ""
        return (
            f'<div class="nbagent-meter-body" data-level="{self.level}"{tooltip} style="'
            "font-size:var(--jp-ui-font-size1,13px);font-family:var(--jp-ui-font-family,"
            'sans-serif);color:var(--jp-content-font-color1,#1a1a1a);line-height:1.6">'
            f"{row}{detail}</div>"
        )


def _compaction_note(state: ContextState) -> str:
    """Why auto-compaction is not armed, in the engine's words spelt for the notebook."""
    return notebook_words(state.compaction_note or "")
