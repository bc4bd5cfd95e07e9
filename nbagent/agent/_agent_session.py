"""`AgentSessionMixin`: the part of `Agent` that reads and acts on its current session —
the history, events, window and context state, pins, compaction (now, previewed, undone)
and what was billed. `Agent` in `_agent` holds the configuration and starts sessions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine._breakdown import Breakdown, context_breakdown
from ..engine._controller import CompactionController
from ..engine._decision import Decision
from ..engine._events import ContextChanged, EventStream
from ..engine._history import History
from ..engine._preview import Preview
from ..engine._thresholds import ContextState, Limits
from ..engine._window import WindowInfo
from ._billing import Billing
from ._branch_events import Branch
from ._model_side import AgentModel
from ._notebook_file import output_metadata
from ._session import Session
from ._settings import Settings
from ._tool_sizes import SizedTools
from ._toolbox import Toolbox


class AgentSessionMixin:
    """What an agent's current session holds and does; `Agent` builds the session."""

    session: Session
    toolbox: Toolbox
    _answers: AgentModel
    if TYPE_CHECKING:
        # the tools mixin's (`_agent_tools`)
        def sized_tools(self, limits: Limits[Settings] | None = None) -> SizedTools: ...

    @property
    def history(self) -> History:
        return self.session.history

    @property
    def events(self) -> EventStream:
        return self.session.events

    @property
    def controller(self) -> CompactionController:
        return self.session.controller

    @property
    def cost(self) -> float:
        return self.session.cost

    @property
    def session_id(self) -> str:
        return self.session.id

    def output_metadata(self) -> dict[str, Any]:
        """The metadata a notebook output of this session carries, so the saved notebook
        names its conversation: renamed, moved or saved under a new name, the notebook
        still continues it at the next kernel start (`nbagent.current()`)."""
        return output_metadata(self.session.id)

    def window(self) -> WindowInfo:
        """The current model's context window, and where the number came from (the
        session's: it may have learnt the provider's real limit)."""
        return self.session.window()

    def context_state(self) -> ContextState:
        """How full the context is now: the count of the next request. The meter shows it
        between turns; within a turn its figure only rises (`ContextChanged` carries the
        turn's highest), though this count may fall as a usage calibrates it."""
        return self.session.context_state()

    def breakdown(self) -> Breakdown:
        """What fills the window now, by kind (the figures behind the notebook's table)."""
        limits = self.session.limits()  # one snapshot for the tools and the state
        sized = self.sized_tools(limits)
        return context_breakdown(self.history, sized.schemas, self.session.context_state(limits),
                                 self.session.tracker.count_text, tools_tokens=sized.tokens,
                                 tools_note=sized.words())

    def pin(self, text: str | None = None, *, message: int | None = None) -> list[str]:
        """Keep a fact verbatim through every compaction: `text`, or the content of the
        history's message at index `message`. Returns the pins now."""
        return self.session.pin(text, message=message)

    def unpin(self, which: int | str) -> list[str]:
        """Remove a pin by its position (0-based) or its exact text. Returns the pins now."""
        return self.session.unpin(which)

    def pins(self) -> list[str]:
        """The facts kept verbatim through every compaction."""
        return list(self.session.pins)

    def compact(self, focus: str | None = None) -> Decision:
        """Compact now, with optional focus instructions (what the summary must keep)."""
        self._answers.probe()
        limits = self.session.limits()  # one snapshot for the compaction and its meter
        with self.session.turn(limits):
            return self.session.controller.compact_now(self.history, focus=focus,
                                                       limits=limits)

    def preview_compaction(self, focus: str | None = None) -> Preview:
        """What `compact(focus)` would do now — which turns it would fold or clear, what
        the floor keeps, the tokens after and the cache rewrite — computed without calling
        the summarizer or changing anything (`preview.text()` says it in a few lines)."""
        return self.session.controller.preview(self.history, focus=focus)

    def undo_compaction(self) -> None:
        """Restore the history as it was before the last compaction (also one a resumed
        archive recorded), as long as nothing was added since; otherwise `NbagentError`
        says why."""
        self.session.undo_compaction()
        self.events.emit(ContextChanged(self.context_state(), self.cost))

    def branches(self) -> list[Branch]:
        """The tasks the model delegated in this session (the `delegate` tool), as they
        ended: each one's status, report, tokens (its transcript, and what returned) and
        cost, which the session's cost and billing include."""
        return list(self.session.branches)

    def billing(self) -> Billing:
        """What this session's chat requests were billed so far: input, cache reads and
        writes, output, and their cost at litellm's prices or the model's own
        (`cache_read_share`)."""
        return self.session.billing
