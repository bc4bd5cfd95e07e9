"""The archive's record kinds, one table a reader can print (`KINDS`): each row says which
event the session's recorder writes it from (None: the archive or the session writes it
itself), the fields a record must carry, how a replay takes it back (also on its fast
path, before the last rewrite) and which field recall searches. A new kind is one row here
plus its writer and a test; `_replay`, `_recall` and `_records` derive every kind list
from the rows. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ...engine._events import Compacted, CompactionStarted, MessageAdded, OutputStored, Rewriting
from ..tools._code_ran import CodeRan, write_code_run

Message = dict[str, Any]
Record = dict[str, Any]
# What the replay's fast path (it parses from the last rewrite on) does with a record of a
# kind met before that rewrite:
#   "replay"   parse it and take it back — the default, so a new kind is never lost
#   "history"  pass over it: the rewrite after it holds the whole history it built
#   "ref"      take back its head (`kind`, `ref`) only: its text stays on disk
#   "exchange" take back the message it names, from the history as it stood there
#   "skip"     pass over it: its replay step takes nothing back (`_nothing`)
Early = Literal["replay", "history", "ref", "exchange", "skip"]


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
    # Only a compaction's rewrite can be undone (as live: `controller.undo`); a rewrite
    # written when a session is resumed or re-archived is not a compaction.
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
    event into the record (through the archive's writer), an extra `check` (a problem,
    or None), what the replay's fast path does with it before the last rewrite (`early`),
    whether it holds the whole history (the fast path starts at the last such record),
    and `searched`: the field holding a message recall searches (None: not searched)."""

    kind: str
    event: type | None
    fields: tuple[tuple[str, type], ...]
    replay: Callable[[ReplayState, Record, int], None]
    write: Callable[[Writer, Any], None] | None = None
    check: Callable[[Record], str | None] = _no_check
    early: Early = "replay"
    whole_history: bool = False
    searched: str | None = None

    @property
    def searchable(self) -> bool:
        return self.searched is not None


KINDS: tuple[RecordKind, ...] = (
    RecordKind("session", None, (("model", str),), _session),
    RecordKind("message", MessageAdded, (("message", dict),), _message, _from_message,
               _check_message, early="history", searched="message"),
    RecordKind("compacting", CompactionStarted, (("trigger", str),), _compacting,
               _from_started),
    RecordKind("rewrite", Rewriting, (("messages", list),), _rewrite, _from_rewrite,
               _check_rewrite, early="history", whole_history=True),
    RecordKind("output", OutputStored, (("ref", str), ("text", str)), _output, _from_output,
               early="ref"),
    RecordKind("decision", Compacted, (("decision", dict),), _decision, _from_compacted,
               _check_decision),
    RecordKind("exchange", None, (("key", str),), _exchange, early="exchange"),
    RecordKind("code_run", CodeRan, (("code", str), ("status", str)), _nothing,
               write_code_run, early="skip"),
)
BY_KIND = {row.kind: row for row in KINDS}  # what `_replay`, `_recall`, `_records` read
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
