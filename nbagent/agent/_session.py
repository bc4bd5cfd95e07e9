"""`Session`: what changes while a user chats — the history, the token tracker, the
output store, the compaction controller, the cost, the learned window and the archive
connection — and the one event stream they all report on. An `Agent` holds what the
user configured and one current session; `Agent.new_session()` starts another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engine._controller import CompactionController
from ..engine._events import (
    Compacted,
    ContextChanged,
    Event,
    EventStream,
    MessageAdded,
    OutputStored,
    Rewriting,
)
from ..engine._exceptions import BusyError
from ..engine._history import History
from ..engine._thresholds import ContextState
from ..engine._tracker import TokenTracker
from ..engine._window import WindowInfo
from ..engine.compaction import Summarizer, pins_of, with_pins
from ._settings import Settings
from .archive import _archive
from .archive._archive import Archive, Replay
from .tools._tool import OutputStore

Message = dict[str, Any]


class Session:
    """One conversation's state. Built by `Agent`; see its docstring for the options.

    Args:
        system: the system prompt (the history's first message, never edited).
        window: the model's window now, given a limit learned from the provider.
        count: tokens a history occupies for the current model and tools.
        settings: the current settings.
        summarize: the compaction summarizer (None: deterministic compaction only).
        session_id: names the archive file; `archive=False` keeps none.
        data_dir: where the archive goes (default: `NBAGENT_DATA_DIR` or the user's data
            folder).
    """

    def __init__(
        self,
        *,
        system: str,
        window: Callable[[int | None], WindowInfo],
        count: Callable[[History], int],
        settings: Callable[[], Settings],
        summarize: Summarizer | None,
        summarizer_window: int | None = None,
        session_id: str | None = None,
        archive: bool = True,
        refresh: Callable[[list[Message]], list[Message]] | None = None,
        data_dir: Path | None = None,
        model_name: Callable[[], str] = lambda: "",
        count_text: Callable[[str], int] | None = None,
    ) -> None:
        self.id = session_id or _archive.new_session_id()
        self.model_name = model_name
        self.events = EventStream()
        self.tracker = TokenTracker(count_text)
        self.history = History([{"role": "system", "content": system}],
                               count_message=self.tracker.count_message)
        self.store = OutputStore(events=self.events)
        self.cost = 0.0
        self.learned_window: int | None = None  # a limit the provider stated in an error
        self.pins: list[str] = []
        self._exchanges: dict[str, Message] = {}  # a cell's key → the user message it sent
        self._unsynced = False  # a message joined the history but its announcement broke
        self._window = window
        self.controller = CompactionController(
            summarize=summarize,
            window=lambda: window(self.learned_window),
            summarizer_window=summarizer_window,
            tracker=self.tracker,
            count=count,
            settings=settings,
            events=self.events,
            refresh=refresh,
        )
        self.events.subscribe(self._on_compacted)
        self.archive: Archive | None = None
        if archive:
            self.attach_archive(lambda: Archive(self.id, data_dir))
        self._turn = threading.Lock()

    # -- the archive ---------------------------------------------------------------------

    def attach_archive(self, open_archive: Archive | Callable[[], Archive], *,
                       include_current: bool = True) -> None:
        """Keep every message, output, rewrite and decision of this session in an archive:
        one already open (a resumed session's), or the one `open_archive` opens on the
        first record, so a session that never chats writes nothing. Opening fails
        (`ArchiveError`) if another agent is writing that session."""
        pending = self.history.messages if include_current else []
        opener = open_archive if not isinstance(open_archive, Archive) else None
        if isinstance(open_archive, Archive):
            self.archive = open_archive
            self.store.loader = open_archive.output
            open_archive.write_session(self.model_name(), self.id)

        def record(event: Event) -> None:
            if not isinstance(event, (MessageAdded, OutputStored, Rewriting, Compacted)):
                return
            archive = self.archive
            if archive is None:
                assert opener is not None
                archive = self.archive = opener()
                self.store.loader = archive.output
                archive.write_session(self.model_name(), self.id)
                for message in pending:
                    archive.write_message(message)
            if isinstance(event, MessageAdded):
                archive.write_message(event.message)
            elif isinstance(event, OutputStored):
                archive.write_output(event.ref, event.text)
            elif isinstance(event, Rewriting):
                archive.write_rewrite(event.messages)
            else:
                archive.write_decision(event.decision.model_dump())

        self.events.subscribe(record, critical=True)

    def close(self) -> None:
        """Release the archive (another agent may then resume this session)."""
        if self.archive is not None:
            self.archive.close()

    def restore(self, replay: Replay) -> None:
        """Take over a replayed archive: its history, outputs and breaker count."""
        self.history.replace(replay.messages)
        self.store.outputs.update(replay.outputs)
        self.controller.restore_failures(replay.failures)
        self.pins = pins_of(replay.messages)

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

    def open_exchange(self, key: str | None, text: str) -> None:
        """Add the user's message; with a `key` (a notebook cell), an earlier exchange of
        the same key leaves the history first (the archive keeps it): re-running a cell
        replaces its exchange, as re-running code replaces its output."""
        if key is not None:
            self.forget_exchange(key)
        self.add({"role": "user", "content": text})
        if key is not None:
            self._exchanges[key] = self.history[-1]

    def forget_exchange(self, key: str) -> bool:
        """Remove the round that `key`'s message opened, if it is still in the history."""
        first = self._exchanges.pop(key, None)
        rounds = self.history.rounds()
        for span in rounds:
            if self.history[span.start] is first:
                messages = self.history.messages
                self.rewrite(messages[:span.start] + messages[span.stop:])
                return True
        return False

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

    def turn(self) -> _Turn:
        """Hold the session for one chat turn: a second one at the same time fails at once."""
        return _Turn(self._turn)

    def count_with(self, count_text: Callable[[str], int] | None) -> None:
        """Count with another tokenizer from now on (the model changed): every message once."""
        if count_text is self.tracker.count_text:
            return
        self.tracker = self.controller.tracker = TokenTracker(count_text)
        self.history.recount(self.tracker.count_message)

    def learn_window(self, limit: int | None) -> None:
        """The provider stated its real limit: use it from now on (source "learned")."""
        if limit is not None and limit > 0 and limit != self.learned_window:
            self.learned_window = limit

    def window(self) -> WindowInfo:
        return self._window(self.learned_window)

    def context_state(self) -> ContextState:
        return self.controller.state(self.history)

    def announce_state(self) -> None:
        self.events.emit(ContextChanged(self.context_state(), self.cost))

    def _on_compacted(self, event: Event) -> None:
        if isinstance(event, Compacted):
            self.cost += event.decision.cost or 0.0
            self.announce_state()


class _Turn:
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            raise BusyError("The agent is busy with another chat; wait for it to finish (one "
                            "turn at a time).")

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
