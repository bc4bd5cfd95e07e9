"""The context meter as a plain one-line display for every chat cell (`MeterLine`): how
full the chat's context is, learnt from the session's events. A chat cell's line keeps the
state of its own turn once a newer line is shown, so a saved notebook is a record. The
widget drawn in the browser (`ContextMeter`, `_meter_widget`) reads the same events
through `follow` and `read` here and renders the same words.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from IPython import get_ipython
from IPython.display import display, update_display

from nbagent import ContextState
from nbagent.events import Compacted, ContextChanged

from ._bundles import inert
from ._frontend import at_cell_end, updates_in_place
from ._reading import MeterReading, billing_words, compaction_text, last_compaction

__all__ = ["Follower", "MeterLine", "follow", "read", "undone"]


class Follower(Protocol):
    """A meter `follow` makes: built for an agent, then fed the agent's events."""

    def __init__(self, *, agent: Any = None) -> None: ...

    def __call__(self, event: object) -> None: ...


_Meter = TypeVar("_Meter", bound=Follower)


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
        return follow(cls, agent)

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
            self.reading = read(ContextChanged(self._agent.context_state(), self._agent.cost),
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
        decision = undone(event)
        if isinstance(event, Compacted) and event.decision.changed:
            decision = event.decision
        if decision is not None:
            self.last_compaction = compaction_text(decision)
            if self.reading is None:
                return
            self.reading = replace(self.reading, last_compaction=self.last_compaction)
        elif isinstance(event, ContextChanged):
            self.reading = read(event, self.last_compaction, self._agent)
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


def follow(kind: type[_Meter], agent: Any) -> _Meter:
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


def read(event: ContextChanged, last: str, agent: Any) -> MeterReading:
    """The reading for a context change: the last compaction as the agent's controller
    has it now (so an undo shows), and the cache share from `agent.billing()`."""
    cache = ""
    if agent is not None:
        last = last_compaction(agent) or last
        cache = billing_words(agent.billing())
    return MeterReading.of(event.state, cost=event.cost, last_compaction=last, cache=cache)


def undone(event: object) -> Any:
    """The decision of an event saying a compaction was undone (`CompactionUndone`)."""
    decision = getattr(event, "decision", None)
    return decision if getattr(decision, "undone", False) else None
