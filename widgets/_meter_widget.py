"""The context meter as a widget drawn in the browser from its synced traits
(`ContextMeter`, anywidget): a bar, the level in words, the numbers and a sparkline. Its own
module because anywidget and ipywidgets (~3.5 MB in a kernel) load only when a user asks for
the widget (`%nbagent meter`); a chat cell's line (`MeterLine`) needs neither.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

import anywidget
from IPython.display import display, update_display
from traitlets import Float, Int, List, TraitError, Unicode, validate

from nbagent import METER_LEVELS, ContextState
from nbagent.events import Compacted, ContextChanged

from ._bundles import inert
from ._frontend import updates_in_place
from ._meter import follow, read, undone
from ._meter_assets import METER_CSS, METER_ESM
from ._reading import LEVELS, WORDS, MeterReading, compaction_text

__all__ = ["ContextMeter"]

SPARK_POINTS = 120


class ContextMeter(anywidget.AnyWidget):  # type: ignore[misc]
    """How full the chat's context is, updated live as the agent works: a bar, the level
    in words, the numbers and a sparkline marking compactions. Subscribe it to a
    session's events; `ContextMeter.for_state(state)` makes one showing a state."""

    _esm = METER_ESM
    _css = METER_CSS

    percent_left = Float(100.0, help="Percent of the context left before auto-compaction "
                         "(of the effective window when it is off).").tag(sync=True)
    headline = Unicode("100% context left", help="The percent left and what it is of, in "
                       "words.").tag(sync=True)
    level = Unicode("ok", help=", ".join(level.name for level in METER_LEVELS)
                    + ": the level (sets the colour).").tag(
        sync=True
    )
    status = Unicode("ok", help="The level in words, and why auto-compaction is off.").tag(
        sync=True
    )
    detail = Unicode("", help="Tokens, trigger, effective window, window, last compaction and "
                     "cost, in words.").tag(sync=True)
    threshold = Int(0, help="The auto-compact trigger (the effective window when off).").tag(
        sync=True
    )
    usage = List(Int(), help="Tokens after each update, for the sparkline.").tag(sync=True)
    compaction_marks = List(Int(), help="Indices into usage where a compaction ran.").tag(sync=True)

    tokens = Int(0, help="Tokens the next request would occupy.")
    window = Int(0, help="The model's context window.")
    window_source = Unicode("", help="Where the window came from: env, litellm, table...")
    last_compaction = Unicode("", help="Levels and tokens before → after of the last one.")
    cost = Float(0.0, help="The session's cost so far, in USD.")

    def __init__(self, *, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._reading: MeterReading | None = None
        self._fallback_id = f"nbagent-meter-fallback-{secrets.token_hex(6)}"
        self._fallback_shown = False
        self._agent = agent  # the agent followed (None: none): its undo marks and billing

    @classmethod
    def for_state(cls, state: ContextState, *, cost: float = 0.0) -> ContextMeter:
        """A meter showing `state` (subscribe it to follow later changes)."""
        meter = cls()
        meter(ContextChanged(state, cost))
        return meter

    @classmethod
    def follow(cls, agent: Any) -> ContextMeter:
        """The session's meter, subscribed to its events once: every `display()` of it
        is one more view of the same widget."""
        return follow(cls, agent)

    @validate("percent_left")  # type: ignore[untyped-decorator]
    def _clamp(self, proposal: dict[str, Any]) -> float:
        return float(min(100.0, max(0.0, proposal["value"])))

    @validate("level")  # type: ignore[untyped-decorator]
    def _known_level(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in LEVELS:
            raise TraitError(f"level must be one of {LEVELS}, not {proposal['value']!r}")
        return str(proposal["value"])

    def __call__(self, event: object) -> None:
        """A subscriber: follow the session's context changes and compactions."""
        if isinstance(event, ContextChanged):
            reading = read(event, self.last_compaction, self._agent)
            self.last_compaction = reading.last_compaction
            self._show(reading)
            self.usage = [*self.usage, event.state.tokens][-SPARK_POINTS:]
        elif isinstance(event, Compacted) and event.decision.changed:
            self.last_compaction = compaction_text(event.decision)
            self.compaction_marks = [*self.compaction_marks, len(self.usage)][-SPARK_POINTS:]
            if self._reading is not None:
                self._show(replace(self._reading, last_compaction=self.last_compaction))
        elif undone(event) is not None and self._reading is not None:
            self.last_compaction = compaction_text(undone(event))
            self._show(replace(self._reading, last_compaction=self.last_compaction))

    def _show(self, reading: MeterReading) -> None:
        self._reading = reading
        if self._fallback_shown:
            update_display(self._fallback(), raw=True, display_id=self._fallback_id)
        with self.hold_sync():
            self.percent_left = reading.percent_left
            self.headline = reading.headline
            self.level = reading.level
            self.status = reading.status
            self.detail = reading.detail
            self.threshold = reading.threshold
            self.tokens = reading.tokens
            self.window = reading.window
            self.window_source = reading.window_source
            self.cost = reading.cost

    def reading(self) -> MeterReading:
        """What the meter shows now (a fresh meter shows an empty context)."""
        if self._reading is not None:
            return self._reading
        return MeterReading(
            percent_left=self.percent_left, level=self.level, label=WORDS[self.level], note="",
            tokens=self.tokens, threshold=self.threshold, window=self.window,
            window_source=self.window_source, cost=self.cost,
            last_compaction=self.last_compaction)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget, with text and HTML for pages that cannot show widgets (nbviewer,
        GitHub, an exported notebook)."""
        reading = self.reading()
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        return {**data, "text/plain": reading.text(), "text/html": reading.html()}, metadata

    def _fallback(self) -> dict[str, str]:
        reading = self.reading()
        return {"text/plain": reading.text(),
                "text/html": f'<div class="nbagent-meter-fallback">{reading.html()}</div>'}

    def _ipython_display_(self) -> None:
        """Show the widget after a plain-HTML copy of it, kept up to date. Where the
        widget draws, its stylesheet hides the copy; in a notebook reopened without its
        kernel (and without saved widget state) the copy shows the last state instead of
        "model not found" alone. A terminal draws no widget: it prints the text once."""
        if not updates_in_place():
            display(inert({"text/plain": self.reading().text()}), raw=True)
            return
        display(self._fallback(), raw=True, display_id=self._fallback_id)
        self._fallback_shown = True
        bundle = super()._repr_mimebundle_()
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = {**data, "text/plain": ""}  # the copy above says it; said once on any page
        display(data, raw=True, metadata=metadata)
