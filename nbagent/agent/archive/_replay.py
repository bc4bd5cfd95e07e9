"""Reading a session back: `replay` streams an archive once, record by record through the
rows of `_kinds.KINDS`, and keeps only what a live session keeps — the history as it last
stood, the cells' exchanges, the undo point, the breaker count — while full tool outputs
stay on disk, read back by offset (`ArchivedOutputs`).
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...engine._exceptions import ArchiveError
from ._kinds import BY_KIND, Early, ReplayState, one_message_kinds
from ._private_files import open_for_reading
from ._records import read_at, read_checked_at, read_lines

Message = dict[str, Any]


def _kinds(*early: Early) -> list[str]:
    """The kinds whose records the fast path treats as `early` says (read from the table
    at each call: a row added to `BY_KIND` counts at once)."""
    return [row.kind for row in BY_KIND.values() if row.early in early]


class ArchivedOutputs(Mapping[str, str]):
    """Full tool outputs by ref, each read from the archive when asked (never all held)."""

    def __init__(self, path: Path, offsets: Mapping[str, int]) -> None:
        self.path, self.offsets = path, dict(offsets)

    def __getitem__(self, ref: str) -> str:
        record = read_at(self.path, self.offsets[ref])
        text = record.get("text") if record is not None and record.get("ref") == ref else None
        if not isinstance(text, str):
            raise KeyError(ref)
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass(frozen=True)
class Replay:
    """A session as its archive last left it: what `Agent.resume` rebuilds from."""

    path: Path
    session_id: str
    model: str | None  # the model of the latest session record
    messages: list[Message]  # messages appended, rewrites replacing
    outputs: Mapping[str, str] = field(default_factory=dict)  # full tool outputs by ref
    failures: int = 0  # the breaker's count in the last decision
    exchanges: dict[str, Message] = field(default_factory=dict)  # cell key -> its message
    undo: list[Message] | None = None  # the history before the last compaction, if undoable
    sequence: int = 0  # the session's place among its data folder's sessions
    branches: list[dict[str, Any]] = field(default_factory=list)  # delegated tasks' records


def replay(path: str | Path) -> Replay:
    """Read an archive back; an archive without a session in it is an `ArchiveError`.

    Only what decides the session's state is parsed: the records from the last rewrite
    on (it holds the whole history then), and before it the session, decision, exchange
    and compaction records, and each output's ref (its text stays on disk). A byte search
    finds them, so a long archive costs what its live session holds, not its length."""
    path = Path(path)
    state = ReplayState(path.stem)
    anchors = [row.kind for row in BY_KIND.values() if row.whole_history]
    marks = _marks(path, anchors + _kinds("replay", "ref", "exchange"))
    rewrites = [offset for offset, kind in marks if kind in anchors]
    start = rewrites[-1] if rewrites else 0
    # The fast path: before the last rewrite only the kinds whose state outlives a rewrite
    # are read (each row's `early` says how); the rewrite holds the history they built.
    for offset, kind in marks:
        if offset >= start:
            break
        early = BY_KIND[kind].early
        if early == "ref":  # the head only: a full output is never parsed here
            ref = _output_ref(path, offset)
            if ref is not None:
                BY_KIND[kind].replay(state, {"kind": kind, "ref": ref}, offset)
        elif early == "exchange":
            _exchange_before(path, offset, rewrites, state)
        elif early == "replay":
            _apply(state, path, offset)
    if state.compacting and start:  # the last rewrite is a compaction's: it can be undone
        previous = [offset for offset in rewrites if offset < start]
        state.messages = _history(path, previous[-1] if previous else 0, start)
    for offset, _, record in read_lines(path, start):
        row = BY_KIND.get(record["kind"])
        if row is not None:  # a kind this version does not know is passed over
            row.replay(state, record, offset)
    if not state.messages or state.messages[0].get("role") != "system":
        raise ArchiveError(f"{path.name} holds no session to resume ({path})")
    return Replay(path, state.session_id, state.model, state.messages,
                  ArchivedOutputs(path, state.outputs), state.failures, state.exchanges,
                  state.undo, state.sequence, state.branches)


def _marks(path: Path, kinds: list[str]) -> list[tuple[int, str]]:
    """(offset, kind) of every record of one of `kinds`, in order, by byte searches for
    each kind's line start (a newline, then `{"kind": "<kind>"`). This holds only because
    the writer puts `kind` first in every record (`Archive.write`) and JSON escapes every
    newline inside a value: a record of the kind always starts so, and no text inside one
    can."""
    try:
        with open_for_reading(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return []
            with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as view:
                marks: list[tuple[int, str]] = []
                for kind in kinds:
                    marker = b'\n{"kind": "' + kind.encode() + b'"'
                    if view[:len(marker) - 1] == marker[1:]:
                        marks.append((0, kind))
                    found = view.find(marker)
                    while found >= 0:
                        marks.append((found + 1, kind))
                        found = view.find(marker, found + len(marker))
                marks.sort()
                if marks and view.find(b"\n", marks[-1][0]) < 0:
                    marks.pop()  # a torn last line: read_lines skips it too
                return marks
    except OSError as error:
        raise ArchiveError(f"cannot read the session archive {path}: {error}") from error


def _apply(state: ReplayState, path: Path, offset: int) -> None:
    record = read_checked_at(path, offset)
    row = BY_KIND.get(record["kind"]) if record is not None else None
    if row is not None and record is not None:
        row.replay(state, record, offset)


def _history(path: Path, start: int, stop: int) -> list[Message]:
    """The history as it stood at byte `stop` (from the rewrite at `start`, or the start)."""
    state = ReplayState(path.stem)
    history = _kinds("history")
    for offset, _, record in read_lines(path, start, stop):
        if record["kind"] in history:
            BY_KIND[record["kind"]].replay(state, record, offset)
    return state.messages


def _exchange_before(path: Path, offset: int, rewrites: list[int], state: ReplayState) -> None:
    """An exchange record before the last rewrite: the message it names, read back."""
    record = read_at(path, offset)
    key = record.get("key") if record is not None else None
    if record is None or not isinstance(key, str) or not key:
        return
    earlier = [at for at in rewrites if at < offset]
    index = record.get("index")
    state.exchanges.pop(key, None)
    if isinstance(index, int):
        messages = _history(path, earlier[-1] if earlier else 0, offset)
        if 0 <= index < len(messages):
            state.exchanges[key] = messages[index]
        return
    message = _message_before(path, offset)
    if message is not None:
        state.exchanges[key] = message


def _message_before(path: Path, offset: int) -> Message | None:
    """The record of one message just before `offset` (the exchange's user message); the
    kinds that add one message are the table's (`one_message_kinds`)."""
    kinds = one_message_kinds()
    markers = [b'\n{"kind": "' + kind.encode() + b'"' for kind in kinds]
    with open_for_reading(path) as handle:
        start = offset
        while start > 0:
            begin = max(0, start - 65_536)
            handle.seek(begin)
            block = handle.read(start - begin)
            found = max(block.rfind(marker, 0, max(0, len(block) - 1)) for marker in markers) \
                if markers else -1
            if found >= 0 or begin == 0:
                at = begin + found + 1 if found >= 0 else 0
                record = read_at(path, at)
                row = BY_KIND.get(record.get("kind", "")) if record is not None else None
                message = record.get(row.holds) if record is not None and row is not None \
                    and row.kind in kinds and row.holds else None
                return message if isinstance(message, dict) else None
            start = begin + 32  # the marker may straddle the block's edge
    return None


def _output_ref(path: Path, offset: int) -> str | None:
    """An output record's ref, read from its start (its text is never parsed here)."""
    with open_for_reading(path) as handle:
        handle.seek(offset)
        head = handle.read(1_024).decode("utf-8", "replace")
    marker = head.find('"ref": ')
    if marker < 0:
        return None
    try:
        ref, _ = json.JSONDecoder().raw_decode(head, marker + len('"ref": '))
    except ValueError:
        return None
    return ref if isinstance(ref, str) else None


def output_offsets(path: Path) -> dict[str, int]:
    """Where each output record of `path` starts, found without parsing other records."""
    found: dict[str, int] = {}
    position = 0
    heads = tuple(b'{"kind": "' + kind.encode() + b'"' for kind in _kinds("ref"))
    try:
        with open_for_reading(path) as handle:
            for line in handle:
                if line.startswith(heads) and line.endswith(b"\n"):
                    try:
                        ref = json.loads(line.decode("utf-8")).get("ref")
                    except (ValueError, AttributeError):
                        ref = None
                    if isinstance(ref, str):
                        found[ref] = position
                position += len(line)
    except OSError:
        return {}
    return found
