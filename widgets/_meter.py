"""The context meter: how full the chat's context is, as a widget drawn in the browser
from its synced traits (`ContextMeter`, anywidget) and as a plain one-line display for
every chat cell (`MeterLine`). Both learn everything from the session's events and
render the same words; their HTML and text fallbacks read well without a kernel. The
widget is always live; a chat cell's line keeps the state of its own turn once a newer
line is shown, so a saved notebook is a record.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any, TypeVar

import anywidget
from IPython import get_ipython
from IPython.display import display, update_display
from traitlets import Float, Int, List, TraitError, Unicode, validate

from nbagent import METER_LEVELS, ContextState
from nbagent.events import Compacted, ContextChanged

from ._bundles import inert
from ._frontend import at_cell_end, updates_in_place
from ._meter_assets import METER_CSS, METER_ESM
from ._reading import (
    LEVELS,
    WORDS,
    MeterReading,
    billing_words,
    compaction_text,
    last_compaction,
)

__all__ = ["LEVELS", "WORDS", "ContextMeter", "MeterLine", "MeterReading", "billing_words"]

SPARK_POINTS = 120
_Meter = TypeVar("_Meter", "ContextMeter", "MeterLine")


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
        return _follow(cls, agent)

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
            reading = _read(event, self.last_compaction, self._agent)
            self.last_compaction = reading.last_compaction
            self._show(reading)
            self.usage = [*self.usage, event.state.tokens][-SPARK_POINTS:]
        elif isinstance(event, Compacted) and event.decision.changed:
            self.last_compaction = compaction_text(event.decision)
            self.compaction_marks = [*self.compaction_marks, len(self.usage)][-SPARK_POINTS:]
            if self._reading is not None:
                self._show(replace(self._reading, last_compaction=self.last_compaction))
        elif _undone(event) is not None and self._reading is not None:
            self.last_compaction = compaction_text(_undone(event))
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


class MeterLine:
    """A one-line meter for a chat cell's output: plain HTML and text, no widget, so
    it costs one small message per update and renders anywhere. Each `show()` is a line
    of its own (its own display id). The newest line follows the session; the one shown
    before it goes back to the state it had when its own cell finished running (the end
    of its turn) and stays so: a saved notebook shows each chat cell's own numbers.

        display(MeterLine.follow(agent))   # in each chat cell; one subscription
    """

    def __init__(self, state: ContextState | None = None, *, cost: float = 0.0,
                 agent: Any = None) -> None:
        self.display_id = f"nbagent-meter-{secrets.token_hex(6)}"  # the newest line's
        self.last_compaction = ""
        self._agent = agent  # the agent followed (None: none): its undo marks and billing
        self.reading: MeterReading | None = (
            MeterReading.of(state, cost=cost) if state is not None else None
        )
        self._run: int | None = None  # the cell run that showed the newest line
        self._showing: dict[str, str] = {}  # what the newest line shows now
        self._settled: dict[str, str] = {}  # ...and what it showed when its run ended
        self._metadata: dict[str, Any] = {}  # the newest line's: the session it is of

    def _bundle(self) -> dict[str, str]:
        if self.reading is None:
            return {"text/plain": "nbagent: context not measured yet",
                    "text/html": '<div class="nbagent-meter-body">context not measured yet</div>'}
        return {"text/plain": self.reading.text(), "text/html": self.reading.html(compact=True)}

    @classmethod
    def follow(cls, agent: Any) -> MeterLine:
        """The session's line, subscribed to its events once; `display()` it in each cell."""
        return _follow(cls, agent)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return self._bundle()

    def _ipython_display_(self) -> None:
        self.show()

    def show(self) -> None:
        """Show a new line in the current cell's output: it follows the session from now
        on, and the line shown before it keeps the state of its own turn. A terminal
        cannot redraw it: there it is printed once, when the cell has run."""
        if not updates_in_place():
            at_cell_end(self, lambda: display(inert(self._bundle()), raw=True))
            return
        self._retire()
        self.display_id = f"nbagent-meter-{secrets.token_hex(6)}"
        self._run = _cell_run()
        if self._agent is not None:
            # the context as it stands, not the last figure told: the turn this line is
            # shown for starts from it, and its figure only rises from there (the line
            # before keeps the highest figure its own turn held)
            self.reading = _read(ContextChanged(self._agent.context_state(), self._agent.cost),
                                 self.last_compaction, self._agent)
            self.last_compaction = self.reading.last_compaction
        bundle = self._bundle()
        # the line names its session in its metadata: the saved notebook then names its
        # conversation, found again after a rename or a move (`nbagent.current()`)
        named = getattr(self._agent, "output_metadata", None)
        self._metadata = named() if callable(named) else {}
        display(bundle, raw=True, display_id=self.display_id, metadata=self._metadata)
        self._showing = self._settled = bundle

    def _retire(self) -> None:
        """Put the newest line back to the state of its own turn, if a later cell (a pin,
        a model change, a compaction, a chat from Python) moved it since."""
        if self._run is not None and self._showing != self._settled:
            update_display(self._settled, raw=True, display_id=self.display_id,
                           metadata=self._metadata)

    def __call__(self, event: object) -> None:
        """A subscriber: redraw the newest line on a context change or a compaction."""
        decision = _undone(event)
        if isinstance(event, Compacted) and event.decision.changed:
            decision = event.decision
        if decision is not None:
            self.last_compaction = compaction_text(decision)
            if self.reading is None:
                return
            self.reading = replace(self.reading, last_compaction=self.last_compaction)
        elif isinstance(event, ContextChanged):
            self.reading = _read(event, self.last_compaction, self._agent)
            self.last_compaction = self.reading.last_compaction
        else:
            return
        if self._run is None or not updates_in_place():  # (a terminal would print it anew)
            return
        bundle = self._bundle()
        if _cell_run() == self._run:  # the line's own cell is still running: its turn
            self._settled = bundle
        if bundle != self._showing:
            update_display(bundle, raw=True, display_id=self.display_id,
                           metadata=self._metadata)
            self._showing = bundle


def _cell_run() -> int:
    """Which cell run this is: IPython's execution count, which stays the same while a cell
    runs and goes up once it ends (0 outside IPython). A line's turn is its cell's run."""
    return int(getattr(get_ipython(), "execution_count", 0) or 0)


def _follow(kind: type[_Meter], agent: Any) -> _Meter:
    """The one `kind` subscribed to the agent's events, made (showing the agent's
    current state) and subscribed the first time."""
    events = agent.events
    for subscriber in events.subscribers():
        if isinstance(subscriber, kind):  # (anywidget gives each instance its own subclass)
            return subscriber
    made = kind(agent=agent)
    made(ContextChanged(agent.context_state(), agent.cost))
    events.subscribe(made)
    return made


def _read(event: ContextChanged, last: str, agent: Any) -> MeterReading:
    """The reading for a context change: the last compaction as the agent's controller
    has it now (so an undo shows), and the cache share from `agent.billing()`."""
    cache = ""
    if agent is not None:
        last = last_compaction(agent) or last
        cache = billing_words(agent.billing())
    return MeterReading.of(event.state, cost=event.cost, last_compaction=last, cache=cache)


def _undone(event: object) -> Any:
    """The decision of an event saying a compaction was undone (`CompactionUndone`)."""
    decision = getattr(event, "decision", None)
    return decision if getattr(decision, "undone", False) else None
