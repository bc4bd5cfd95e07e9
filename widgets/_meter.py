"""`ContextMeter`: the live "N% context left" meter. Synced traits and rendering only;
it learns everything from the agent's events (`agent.hooks.append(meter)`).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import traitlets
from traitlets import Bool, Float, Int, List, TraitError, Unicode, validate

from nbagent.events import Compacted, ContextChanged

LEVELS = ("ok", "warning", "error", "compact", "blocking")
COLOURS = {
    "ok": "#2e7d32",
    "warning": "#f9a825",
    "error": "#ef6c00",
    "compact": "#6a1b9a",
    "blocking": "#c62828",
}
SPARK_POINTS = 120


class ContextMeter(widgets.VBox):  # type: ignore[misc]
    """How full the chat's context is, updated live as the agent works."""

    percent_left = Float(100.0, help="Percent of the context left before auto-compaction.").tag(
        sync=True
    )
    tokens = Int(0, help="Tokens the next request would occupy.").tag(sync=True)
    threshold = Int(0, help="The auto-compact trigger (or the effective window when off).").tag(
        sync=True
    )
    level = Unicode("ok", help="ok, warning, error, compact or blocking.").tag(sync=True)
    armed = Bool(True, help="Whether automatic compaction will run.").tag(sync=True)
    window = Int(0, help="The model's context window.").tag(sync=True)
    window_source = Unicode("", help="Where the window came from: env, litellm, table...").tag(
        sync=True
    )
    last_compaction = Unicode("", help="Levels and tokens before → after of the last one.").tag(
        sync=True
    )
    usage = List(Int(), help="Tokens after each update, for the sparkline.").tag(sync=True)
    compaction_marks = List(Int(), help="Indices into usage where a compaction ran.").tag(sync=True)
    cost = Float(0.0, help="The session's cost so far, in USD.").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        self._view = widgets.HTML()
        super().__init__([self._view], **kwargs)
        self.add_class("nbagent-meter")
        self.observe(self._render, names=traitlets.All)
        self._render()

    @validate("percent_left")
    def _clamp(self, proposal: dict[str, Any]) -> float:
        return float(min(100.0, max(0.0, proposal["value"])))

    @validate("level")
    def _known_level(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in LEVELS:
            raise TraitError(f"level must be one of {LEVELS}, not {proposal['value']!r}")
        return str(proposal["value"])

    def __call__(self, event: object) -> None:
        """A hook: follow the agent's context changes and compactions."""
        if isinstance(event, ContextChanged):
            state = event.state
            limits = state.thresholds
            with self.hold_trait_notifications():
                self.percent_left = state.percent_left
                self.tokens = state.tokens
                self.threshold = (
                    limits.auto_compact if state.auto_compact_armed else (limits.effective_window)
                )
                self.level = state.level
                self.armed = state.auto_compact_armed
                self.window = limits.context_window
                self.window_source = state.window_source
                self.cost = event.cost
                self.usage = [*self.usage, state.tokens][-SPARK_POINTS:]
        elif isinstance(event, Compacted) and event.decision.changed:
            decision = event.decision
            self.last_compaction = (
                f"{' → '.join(decision.levels)}: "
                f"{decision.tokens_before:,} → {decision.tokens_after:,}"
            )
            self.compaction_marks = [*self.compaction_marks, len(self.usage)][-SPARK_POINTS:]

    def _sparkline(self) -> str:
        if len(self.usage) < 2:
            return ""
        width, height = 160, 28
        top = max(max(self.usage), self.threshold, 1)
        step = width / (len(self.usage) - 1)
        points = " ".join(
            f"{i * step:.1f},{height - value / top * height:.1f}"
            for i, value in enumerate(self.usage)
        )
        marks = "".join(
            f'<line x1="{min(m, len(self.usage) - 1) * step:.1f}" y1="0" '
            f'x2="{min(m, len(self.usage) - 1) * step:.1f}" y2="{height}" stroke="#6a1b9a" '
            'stroke-dasharray="2 2"/>'
            for m in self.compaction_marks
        )
        limit = height - self.threshold / top * height
        return (
            f'<svg class="nbagent-spark" width="{width}" height="{height}">'
            f'<line x1="0" y1="{limit:.1f}" x2="{width}" y2="{limit:.1f}" stroke="#bbb"/>'
            f'{marks}<polyline points="{points}" fill="none" stroke="#1565c0"/></svg>'
        )

    def _render(self, change: object = None) -> None:
        colour = COLOURS[self.level]
        used = 100.0 - self.percent_left
        state = "auto-compact off" if not self.armed else f"auto-compact at {self.threshold:,}"
        last = (
            f" · last compaction {html.escape(self.last_compaction)}"
            if (self.last_compaction)
            else ""
        )
        cost = f" · ${self.cost:.4f}" if self.cost else ""
        self._view.value = (
            f'<div class="nbagent-meter-body" data-level="{self.level}" style="font:12px '
            f'sans-serif;display:flex;align-items:center;gap:8px">'
            f'<div style="width:160px;height:10px;background:#eee;border-radius:5px">'
            f'<div class="nbagent-meter-bar" style="width:{used:.1f}%;height:10px;'
            f'background:{colour};border-radius:5px"></div></div>'
            f'<b class="nbagent-meter-text" style="color:{colour}">'
            f"{self.percent_left:.0f}% context left</b>"
            f"<span>{self.tokens:,} / {self.threshold:,} tokens · {state} · window "
            f"{self.window:,} ({html.escape(self.window_source)}){last}{cost}</span>"
            f"{self._sparkline()}</div>"
        )
