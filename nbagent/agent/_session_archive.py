"""`SessionArchiveMixin`: the part of `Session` that connects it to its archive — attaching
one (open now or on the first record), writing each event through the kinds table with the
snapshot a new file starts with, reading a dropped output back, closing, and taking over a
replayed archive. `Session` in `_session` holds the state and is its only writer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine._controller import CompactionController
from ..engine._events import EventStream, MessageAdded, OutputStored, Rewriting
from ..engine._history import History
from ..engine.compaction import pins_of
from ._branch_events import Branch, BranchFinished
from ._model_side import SessionAnswers
from .archive._archive import Archive, Replay
from .archive._kinds import ExchangeOpened, SessionStarted, is_recorded
from .tools._tool import OutputStore

Message = dict[str, Any]


class SessionArchiveMixin:
    """Where a session's records go; `Session` builds the state it reads."""

    id: str
    events: EventStream
    answers: SessionAnswers
    history: History
    store: OutputStore
    controller: CompactionController
    pins: list[str]
    branches: list[Branch]
    archive: Archive | None
    _opener: Callable[[], Archive] | None
    _pending: list[Message]
    _exchanges: dict[str, Message]
    _undo: tuple[list[Message], int, int] | None

    def attach_archive(self, open_archive: Archive | Callable[[], Archive], *,
                       include_current: bool = True) -> None:
        """Keep every message, output, rewrite and decision of this session in an archive:
        one already open (a resumed session's), or the one `open_archive` opens on the
        first record, so a session that never chats writes nothing. Opening fails
        (`ArchiveError`) if another agent is writing that session. Which event becomes
        which record is the archive's table (`archive._kinds.KINDS`). Called again, the
        records go to the new archive from then on. Until a session has an archive it keeps
        every output in memory (nothing could read a dropped one back)."""
        if self._record not in self.events:
            self.events.subscribe(self._record, critical=True)
        if isinstance(open_archive, Archive):
            self._opener, self._pending = None, []
            self._use_archive(open_archive)
        else:
            self.archive, self._opener = None, open_archive
            self._pending = self.history.messages if include_current else []

    def _record(self, event: object) -> None:
        """The one way this session writes its archive: each event through its row of the
        kinds table, with the snapshot a new file would start with."""
        if not is_recorded(event):
            return
        archive = self.archive
        if archive is None:
            if self._opener is None:
                return
            archive = self._use_archive(self._opener())
            for message in self._pending:
                archive.record(MessageAdded(message), snapshot=self.snapshot)
            self._pending = []
        archive.record(event, snapshot=self.snapshot)

    def _use_archive(self, archive: Archive) -> Archive:
        self.archive = archive
        archive.record(SessionStarted(self.answers.name(), self.id), snapshot=self.snapshot)
        return archive

    def _archived_output(self, ref: str) -> str | None:
        """A full output that left memory, read back from the archive (as it is now)."""
        return self.archive.output(ref) if self.archive is not None else None

    def snapshot(self, fresh: bool) -> list[object]:
        """The events that bring an archive up to this session (each written through its
        row): for a `fresh` file (the old one was lost) the session and every message,
        else the history as one rewrite; then the cells' exchanges, the outputs still
        in memory and the delegated tasks' records."""
        messages = self.history.messages
        events: list[object] = [SessionStarted(self.answers.name(), self.id)]
        events += ([MessageAdded(m) for m in messages] if fresh else [Rewriting(messages)])
        for key, first in self._exchanges.items():
            index = next((i for i, m in enumerate(messages) if m is first), None)
            if index is not None:
                events.append(ExchangeOpened(key, index))
        events += [OutputStored(ref, text) for ref, text in self.store.outputs.items()]
        events += [BranchFinished(branch) for branch in self.branches]
        return events

    def close(self) -> None:
        """Release the archive (another agent may then resume this session)."""
        if self.archive is not None:
            self.archive.close()

    def restore(self, replay: Replay) -> None:
        """Take over a replayed archive: its history, the cells' exchanges, the undo
        point, the breaker count, the delegated tasks' records and the newest outputs (as
        many as a live session keeps in memory; the others are read back from the archive
        when asked)."""
        self.history.replace(replay.messages)
        messages = self.history.messages
        for key, first in replay.exchanges.items():
            index = next((i for i in range(len(messages) - 1, -1, -1)
                          if messages[i] == first), None)
            if index is not None:
                self._exchanges[key] = self.history[index]
        if replay.undo is not None:
            self._undo = (replay.undo, self.history.generation, len(self.history))
        refs = list(replay.outputs)[-self.store.keep:]
        self.store.outputs.update({ref: replay.outputs[ref] for ref in refs})
        self.controller.restore_failures(replay.failures)
        self.pins = pins_of(replay.messages)
        self.branches = [branch for branch in map(Branch.from_record, replay.branches)
                         if branch is not None]
