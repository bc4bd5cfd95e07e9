"""The archive's record kinds, one table a reader can print (`KINDS`): each row says which
event the session's recorder writes it from (None: the archive or the session writes it
itself), the fields a record must carry, how a replay takes it back and whether recall
searches it. A new kind is one row here plus its writer (`Archive.write_*`) and a test.
No I/O here: `_records` reads and checks lines, `_replay` and `_recall` use the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...engine._events import Compacted, CompactionStarted, MessageAdded, OutputStored, Rewriting
from ..tools._code_ran import CodeRan, write_code_run

Message = dict[str, Any]
Record = dict[str, Any]


@dataclass
class ReplayState:
    """What a replay has gathered so far, record by record (only what a live session
    keeps: full outputs stay on disk, known by where their record starts)."""

    session_id: str
    model: str | None = None
    sequence: int = 0  # the newest session record's place among all sessions (`latest`)
    messages: list[Message] = field(default_factory=list)
    outputs: dict[str, int] = field(default_factory=dict)  # ref -> offset of its record
    failures: int = 0
    exchanges: dict[str, Message] = field(default_factory=dict)  # cell key -> its message
    undo: list[Message] | None = None  # the history before the last compaction, while valid
    compacting: bool = False  # between a compaction's start and its decision


def _session(state: ReplayState, record: Record, offset: int) -> None:
    state.model = record["model"]
    state.session_id = str(record.get("id") or state.session_id)
    sequence = record.get("sequence")
    if isinstance(sequence, int):
        state.sequence = sequence


def _message(state: ReplayState, record: Record, offset: int) -> None:
    state.messages.append(record["message"])
    state.undo = None  # the conversation went on: nothing to undo


def _rewrite(state: ReplayState, record: Record, offset: int) -> None:
    before, state.messages = state.messages, list(record["messages"])
    state.undo = before if state.compacting else None


def _compacting(state: ReplayState, record: Record, offset: int) -> None:
    state.compacting = True


def _output(state: ReplayState, record: Record, offset: int) -> None:
    state.outputs[record["ref"]] = offset


def _decision(state: ReplayState, record: Record, offset: int) -> None:
    state.failures = record["decision"].get("failures", 0)
    state.compacting = False


def _exchange(state: ReplayState, record: Record, offset: int) -> None:
    index = record.get("index")
    index = index if isinstance(index, int) else len(state.messages) - 1
    if record["key"] and 0 <= index < len(state.messages):
        state.exchanges[record["key"]] = state.messages[index]


def _nothing(state: ReplayState, record: Record, offset: int) -> None:
    """A record a replay does not take back (what the agent ran is history already)."""


def _roles(values: list[Any]) -> bool:
    return all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in values)


def _check_message(record: Record) -> str | None:
    return None if isinstance(record["message"].get("role"), str) else \
        "holds a message without a role"


def _check_rewrite(record: Record) -> str | None:
    return None if _roles(record["messages"]) else "holds a rewrite that is not a list of messages"


def _check_decision(record: Record) -> str | None:
    return None if isinstance(record["decision"].get("failures", 0), int) else \
        "holds a decision with a bad failure count"


def _no_check(record: Record) -> str | None:
    return None


class Writer(Protocol):
    """The archive's writers the rows call (`_writer.Archive` has them)."""

    def write_message(self, message: Message) -> None: ...

    def write_compacting(self, trigger: str, tokens: int) -> None: ...

    def write_rewrite(self, messages: list[Message]) -> None: ...

    def write_output(self, ref: str, text: str) -> None: ...

    def write_decision(self, decision: Record) -> None: ...


def _from_message(archive: Writer, event: Any) -> None:
    archive.write_message(event.message)


def _from_started(archive: Writer, event: Any) -> None:
    archive.write_compacting(event.trigger, event.tokens)


def _from_rewrite(archive: Writer, event: Any) -> None:
    archive.write_rewrite(list(event.messages))  # synced: written ahead of the swap


def _from_output(archive: Writer, event: Any) -> None:
    archive.write_output(event.ref, event.text)


def _from_compacted(archive: Writer, event: Any) -> None:
    archive.write_decision(event.decision.model_dump())


@dataclass(frozen=True)
class RecordKind:
    """One row: `kind` as written on each line, the `event` it is written from, the
    `fields` (name, type) it must carry, the `replay` step, the `write` that turns the
    event into the record (through the archive's writer) and an extra `check` (a
    problem, or None)."""

    kind: str
    event: type | None
    fields: tuple[tuple[str, type], ...]
    replay: Callable[[ReplayState, Record, int], None]
    write: Callable[[Writer, Any], None] | None = None
    check: Callable[[Record], str | None] = _no_check
    searchable: bool = False


KINDS: tuple[RecordKind, ...] = (
    RecordKind("session", None, (("model", str),), _session),
    RecordKind("message", MessageAdded, (("message", dict),), _message, _from_message,
               _check_message, searchable=True),
    RecordKind("compacting", CompactionStarted, (("trigger", str),), _compacting,
               _from_started),
    RecordKind("rewrite", Rewriting, (("messages", list),), _rewrite, _from_rewrite,
               _check_rewrite),
    RecordKind("output", OutputStored, (("ref", str), ("text", str)), _output, _from_output),
    RecordKind("decision", Compacted, (("decision", dict),), _decision, _from_compacted,
               _check_decision),
    RecordKind("exchange", None, (("key", str),), _exchange),
    RecordKind("code_run", CodeRan, (("code", str), ("status", str)), _nothing,
               write_code_run),
)
BY_KIND = {row.kind: row for row in KINDS}
BY_EVENT = {row.event: row for row in KINDS if row.event is not None}


def table() -> str:
    """The table as text: kind, the event it is written from, its fields."""
    lines = [f"{'kind':<10} {'written from':<17} fields"]
    for row in KINDS:
        source = row.event.__name__ if row.event is not None else "(direct)"
        names = ", ".join(name for name, _ in row.fields)
        recalled = "  (recall searches it)" if row.searchable else ""
        lines.append(f"{row.kind:<10} {source:<17} {names}{recalled}")
    return "\n".join(lines)
