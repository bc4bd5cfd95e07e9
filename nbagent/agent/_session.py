"""`Session`: what changes while a user chats — the history, the token tracker, the
output store, the compaction controller, the cost, the learned window and the archive
connection — and the one event stream they all report on. An `Agent` holds what the
user configured and one current session; `Agent.new_session()` starts another. It is
the one place that says which window applies, and the only writer of its state (`bill`,
`bill_branch`, `mark_cache`, `learn_window`): nothing outside assigns into it. How the
session reaches its archive is its part in `_session_archive`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..engine._controller import CompactionController
from ..engine._events import (
    Compacted,
    CompactionUndone,
    ContextChanged,
    Event,
    EventStream,
    MessageAdded,
    Rewriting,
)
from ..engine._exceptions import BusyError
from ..engine._history import History
from ..engine._thresholds import ContextState, Limits
from ..engine._tracker import TokenTracker
from ..engine._window import WindowInfo
from ..engine.compaction import with_pins
from ._asked_compaction import AskedCompaction
from ._billing import Billing
from ._branch_events import Branch, BranchFinished
from ._model_side import AgentModel, SessionAnswers
from ._session_archive import SessionArchiveMixin
from ._settings import Settings
from .archive import _archive
from .archive._archive import Archive
from .archive._kinds import ExchangeOpened
from .models._llm import Completion
from .tools._tool import OutputStore

Message = dict[str, Any]


class Session(SessionArchiveMixin):
    """One conversation's state. Built by `Agent`; see its docstring for the options.
    Its `answers` (`SessionAnswers`: the agent's answers with this session's learned limit
    and tracker) are what its controller asks (`ModelQuestions`) and where it reads which
    window applies.

    Args:
        model: the agent's answers about the model it chats with.
        system: the system prompt (the history's first message, never edited).
        session_id: names the archive file; `archive=False` keeps none.
        data_dir: where the archive goes (default: `NBAGENT_DATA_DIR` or the user's data
            folder).
    """

    def __init__(
        self,
        model: AgentModel,
        *,
        system: str,
        session_id: str | None = None,
        archive: bool = True,
        data_dir: Path | None = None,
    ) -> None:
        self.id = session_id or _archive.new_session_id()
        self.events = EventStream()
        self.tracker = TokenTracker(model.count_text())
        self.learned_window: int | None = None  # a limit the server showed (`learn_window`)
        self._limits: dict[str, int] = {}  # what learned it: "stated" (an error), "cut"
        self.usage_partial = False  # its usage counted part of a prompt: no window from it
        self.said: set[str] = set()  # the notices said once a session (a window found out)
        # the model questions, answered with this session's state (read at each call)
        self.answers = SessionAnswers(model, learned=lambda: self.learned_window,
                                      tracker=self.tracker)
        self.history = History([{"role": "system", "content": system}],
                               count_message=self.tracker.count_message)
        # given its loader now: outputs leave memory only while the session has an archive
        # to read them back from (one attached later, `attach_archive`, counts from then on)
        self.store = OutputStore(events=self.events, loader=self._archived_output,
                                 loadable=lambda: self.archive is not None)
        self.cost = 0.0
        self.billing = Billing()  # what its chat requests were billed
        self.cache_marks: dict[int, str] = {}  # breakpoints sent: index → prefix digest
        self.pins: list[str] = []
        self.turns = 0  # user turns opened so far
        self.branches: list[Branch] = []  # the delegated tasks it ran, as they ended
        self._exchanges: dict[str, Message] = {}  # a cell's key → the user message it sent
        self._unsynced = False  # a message joined the history but its announcement broke
        self._undo: tuple[list[Message], int, int] | None = None  # a resumed undo point
        # while a turn runs: the history's generation and the highest figure the meter was
        # told in it (`reading`)
        self._held: tuple[int, int] | None = None
        self.controller = CompactionController(self.answers, tracker=self.tracker,
                                               events=self.events)
        self.events.subscribe(self._on_compacted)
        # the compaction the model asks for, run by the loop at its next turn boundary
        self.asked_compaction = AskedCompaction(
            lambda: self.turns, lambda: not self.answers.settings().disable_compact)
        self.archive: Archive | None = None
        self._opener: Callable[[], Archive] | None = None  # opens it at the first record
        self._pending: list[Message] = []  # what a lazily opened archive starts with
        if archive:
            self.attach_archive(lambda: Archive(self.id, data_dir))
        self._turn = threading.Lock()

    def window(self) -> WindowInfo:
        """The window this session's requests must fit: the model's, or the limit the
        provider stated (source "learned")."""
        return self.answers.window()

    def limits(self) -> Limits[Settings]:
        """The settings, the window and its thresholds now, in one snapshot: what a turn,
        a compaction or a reading of the state takes once and passes down."""
        return self.answers.limits()

    def undo_compaction(self) -> None:
        """Put back the history as it was before the last compaction (also one a resumed
        archive recorded), if nothing was added since; otherwise `NbagentError`."""
        restored, self._undo = self._undo, None
        if restored is None:
            self.controller.undo(self.history)
            return
        before, generation, length = restored
        if self.history.generation != generation or len(self.history) != length:
            self._undo = restored
            self.controller.undo(self.history)  # a later compaction's, or the error
            return
        self.rewrite(before)

    # -- messages, turns, state -------------------------------------------------------------

    def add(self, message: Message) -> None:
        """Append one message to the history (validated) and announce it (the archive
        writes it). If that write was cut short (an interrupt), the next change first
        writes the whole history again, so the archive always resumes."""
        self.resync_archive()
        self.history.append(message)
        self._unsynced = True
        self.events.emit(MessageAdded(self.history[-1]))
        self._unsynced = False

    def resync_archive(self) -> None:
        """After an announcement was cut short: archive the history as it stands."""
        if self._unsynced:
            self.events.emit(Rewriting(self.history.messages))
            self._unsynced = False

    def open_exchange(self, key: str | None, text: str) -> bool:
        """Add the user's message; with a `key` (a notebook cell), an earlier exchange of
        the same key leaves the history first (the archive keeps it): re-running a cell
        replaces its exchange, as re-running code replaces its output. True when an
        earlier exchange was replaced."""
        replaced = self.forget_exchange(key) if key is not None else False
        self.turns += 1
        self.add({"role": "user", "content": text})
        if key is not None:
            self._exchanges[key] = self.history[-1]
            if self.archive is not None:
                self._record(ExchangeOpened(key))
        return replaced

    def forget_exchange(self, key: str) -> bool:
        """Remove the round that `key`'s message opened, if it is still in the history (a
        key not seen before, a new cell's, needs no look at the rounds)."""
        first = self._exchanges.pop(key, None)
        if first is None:
            return False
        rounds = self.history.rounds()
        for span in rounds:
            if self.history[span.start] is first:
                messages = self.history.messages
                self.rewrite(messages[:span.start] + messages[span.stop:])
                return True
        return False

    def pin(self, text: str | None = None, *, message: int | None = None) -> list[str]:
        """Pin `text`, or the content of the history's message at index `message`."""
        if message is not None:
            text = str(self.history[message].get("content") or "")
        if not text or not text.strip():
            raise ValueError("Nothing to pin: give a text or a message index.")
        self.set_pins([*self.pins, text])
        return list(self.pins)

    def unpin(self, which: int | str) -> list[str]:
        """Remove a pin by its position (0-based) or its exact text."""
        pins = list(self.pins)
        if isinstance(which, int):
            if not 0 <= which < len(pins):
                raise ValueError(f"There is no pin {which}; there are {len(pins)}.")
            del pins[which]
        elif which.strip() in pins:
            pins.remove(which.strip())
        else:
            raise ValueError(f"No pin reads {which!r}.")
        self.set_pins(pins)
        return pins

    def set_pins(self, pins: list[str]) -> None:
        """Keep `pins` verbatim in one block every compaction leaves alone (the archive
        records the rewrite)."""
        self.pins = [p for p in (text.strip() for text in pins) if p]
        self.rewrite(with_pins(self.history.messages, self.pins))

    def rewrite(self, messages: list[Message]) -> None:
        """Swap in a rewritten history (validated; written ahead to the archive)."""
        self.history.copy_with(messages)  # validate before anything is written
        self.events.emit(Rewriting(messages))
        self._unsynced = False  # the rewrite record carried everything
        self.history.replace(messages)

    @contextmanager
    def turn(self, limits: Limits[Settings] | None = None) -> Iterator[None]:
        """Hold the session for one chat turn: a second one at the same time fails at once.
        While it runs, the meter's figure only rises (`reading`), from the context as it
        stands at its start (what a meter shown then reads: a new line in the notebook)."""
        if not self._turn.acquire(blocking=False):
            raise BusyError("The agent is busy with another chat; wait for it to finish (one "
                            "turn at a time).")
        try:
            self._held = (self.history.generation, self.context_state(limits).tokens)
            yield
        finally:
            self._held = None
            self._turn.release()

    def model_changed(self) -> None:
        """The agent switched models: forget the old one's stated limit and count with the
        new one's tokenizer from now on (every message once)."""
        self.learned_window, self._limits, self.usage_partial = None, {}, False
        self.said.clear()  # another server: what was found out of the last one is not said
        if self._held is not None:  # counted by another tokenizer: a figure of its own
            self._held = (self.history.generation, 0)
        self.tracker.forget_server()
        count_text = self.answers.count_text()
        if count_text is not self.tracker.count_text:
            self.tracker.use_counter(count_text)
            self.history.recount(self.tracker.count_message)
        self.announce_state()

    def bill(self, completion: Completion) -> None:
        """Add what one chat request was billed (its usage and cost) to this session's."""
        self.cost += completion.cost or 0.0
        self.billing.add(completion.usage, cost=completion.cost,
                         input_cost=completion.input_cost)

    def bill_branch(self, branch: Branch, billing: Billing) -> None:
        """Count a delegated task that ended: its cost and billed tokens join this
        session's, and its record the session's branches (the archive keeps it)."""
        self.cost += branch.cost
        self.billing.absorb(billing)
        self.branches.append(branch)
        self.events.emit(BranchFinished(branch))
        self.announce_state()

    def mark_cache(self, marks: dict[int, str]) -> None:
        """The cache breakpoints the next request sends (index → prefix digest), kept so
        the request after it can tell which of them still hold."""
        self.cache_marks = marks

    def learn_window(self, limit: int | None, *, needs: int | None = None,
                     cut: bool = False) -> bool:
        """The server showed its real limit — stated in an overflow error, or (`cut`) the
        most it read of a prompt it cut (`_window_stops.front_cut`): keep within it from now
        on (source "learned"). This is the one place a window is learned. With `needs`
        (what every request needs now: the system prompt, pins, tools and the latest
        round, as counted for a window of `limit`), a limit whose blocking threshold
        cannot hold that is not believed; nor is a cut once the server's usage was shown
        to count only part of a prompt (`distrust_usage`). Returns whether it was learned."""
        if limit is None or limit <= 0 or (cut and self.usage_partial):
            return False
        if needs is not None and needs >= self.blocking_at(limit):
            return False
        self._limits["cut" if cut else "stated"] = limit
        self.learned_window = min(self._limits.values())
        return True

    def distrust_usage(self) -> bool:
        """The server's usage was shown to count only part of a prompt (a reading far under
        what it read at once before): no window is learned from its usage from now on, its
        usage no longer calibrates our count, and a window learned from it is taken back
        (True when there was one). A limit it stated in an error stays."""
        self.usage_partial = True
        self.tracker.ignore_usage(self.answers.name())  # nor is our count calibrated by it
        taken = self._limits.pop("cut", None) is not None
        self.learned_window = min(self._limits.values(), default=None)
        return taken

    def blocking_at(self, limit: int) -> int:
        """The blocking threshold a window of `limit` tokens would give this session."""
        return self.answers.model.limits(limit).thresholds.blocking

    def say_once(self, key: str, text: str) -> list[str]:
        """`[text]` the first time `key` is said in this session, else `[]`."""
        if key in self.said:
            return []
        self.said.add(key)
        return [text]

    def context_state(self, limits: Limits[Settings] | None = None) -> ContextState:
        """How full the context is, under `limits` (a turn's; by default the limits now): the
        count of the next request, as the controller and the blocking check read it."""
        return self.controller.state(self.history, limits)

    def reading(self, limits: Limits[Settings] | None = None, *, sent: int = 0
                ) -> ContextState:
        """The state the meter is told (`announce_state`). Between turns, `context_state`.
        Within a turn its figure only rises: never under one the turn already showed, nor
        under a request it sent (`sent`: that request's own count) — though the count
        underneath may fall, when a usage reads less than our estimate (the tracker learns
        from it) or a request shows fewer tools than the one before. A rewritten history
        (a compaction, the one fall the meter shows, and says) starts the figure again from
        its new count."""
        state = self.context_state(limits)
        if self._held is None:
            return state
        generation, held = self._held
        if generation != self.history.generation:
            held = 0
        figure = max(state.tokens, held, sent)
        self._held = (self.history.generation, figure)
        return state.at_least(figure)

    def announce_state(self, limits: Limits[Settings] | None = None, *, sent: int = 0) -> None:
        """Tell the meter (and every subscriber) the context state under `limits`
        (`reading`; `sent`: a request being sent now)."""
        self.events.emit(ContextChanged(self.reading(limits, sent=sent), self.cost))

    def _on_compacted(self, event: Event) -> None:
        if isinstance(event, Compacted):
            self.cost += event.decision.cost or 0.0
            self.announce_state(event.limits)  # the state under the compaction's limits
        elif isinstance(event, CompactionUndone):  # the history moved back: no cost
            self.announce_state()
