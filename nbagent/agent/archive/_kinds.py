"""The archive's record kinds, one table a reader can print (`KINDS`): each row says which
event it is written from, the one function that turns that event into the record, the
fields a record must carry, how a replay takes it back (also on its fast path, before the
last rewrite) and which field recall searches. Every record is written through a row
(`record_of`): the session's events, the records a new file starts with, the session's
own. A new kind is one row here plus a test; `_writer`, `_replay`, `_recall` and
`_records` ask the rows, never a kind's name. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...engine._events import (
    CellProposed,
    Compacted,
    CompactionStarted,
    CompactionUndone,
    ContextChanged,
    MessageAdded,
    Notice,
    OutputStored,
    Retrying,
    Rewriting,
    Status,
    ToolFinished,
    ToolStarted,
)
from .._branch_events import BranchFinished, BranchMessage, BranchProgress, BranchStarted
from ..tools._code_ran import CodeRan, CodeStarting, code_run_record, code_start_record

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
    branches: list[Record] = field(default_factory=list)  # the delegated tasks, as they ended


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


def _branch(state: ReplayState, record: Record, offset: int) -> None:
    state.branches.append({k: v for k, v in record.items() if k != "kind"})


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


@dataclass(frozen=True)
class SessionStarted:
    """A session starts writing its archive (or goes on in it after a resume): its model
    and its id."""

    model: str
    id: str


@dataclass(frozen=True)
class ExchangeOpened:
    """The history's message `index` (None: the last) opened the cell `key`'s exchange."""

    key: str
    index: int | None = None


# One function per kind: the fields of the record its event becomes.
def _from_session(event: Any) -> Record:
    return {"model": event.model, "id": event.id}


def _from_message(event: Any) -> Record:
    return {"message": event.message}


def _from_started(event: Any) -> Record:
    return {"trigger": event.trigger, "tokens": event.tokens}


def _from_rewrite(event: Any) -> Record:
    return {"messages": list(event.messages)}


def _from_output(event: Any) -> Record:
    return {"ref": event.ref, "text": event.text}


def _from_compacted(event: Any) -> Record:
    return {"decision": event.decision.model_dump()}


def _from_branch(event: Any) -> Record:
    return dict(event.branch.as_record())


def _from_branch_message(event: Any) -> Record:
    return {"branch": event.number, "message": event.message}


def _branch_origin(record: Record) -> str:
    return f"delegated task {record.get('branch')}"


def _from_exchange(event: Any) -> Record:
    return {"key": event.key} if event.index is None else {"key": event.key,
                                                           "index": event.index}


@dataclass(frozen=True)
class RecordKind:
    """One row: `kind` as written on each line, the `event` it is written from, the
    `fields` (name, type) it must carry, the `replay` step, `record`: the one function
    that turns the event into the record's fields (the archive writes only what a row
    made), an extra `check` (a problem, or None), what the replay's fast path does with
    it before the last rewrite (`early`), whether it holds the whole history (the fast
    path starts at the last such record), `holds`: the field holding history messages
    (one message, or the whole history), `sync`: written to disk before the history
    changes (write-ahead), `header`: what a file starts with (a new file after a loss
    repeats it), `searched`: the field holding a message recall searches, and `origin`:
    where such a message came from, as recall names it (None: the session itself)."""

    kind: str
    event: type | None
    fields: tuple[tuple[str, type], ...]
    replay: Callable[[ReplayState, Record, int], None]
    record: Callable[[Any], Record] | None = None
    check: Callable[[Record], str | None] = _no_check
    early: Early = "replay"
    whole_history: bool = False
    searched: str | None = None
    holds: str | None = None
    sync: bool = False
    header: bool = False
    origin: Callable[[Record], str] | None = None

    @property
    def searchable(self) -> bool:
        return self.searched is not None


KINDS: tuple[RecordKind, ...] = (
    RecordKind("session", SessionStarted, (("model", str),), _session, _from_session,
               header=True),
    RecordKind("message", MessageAdded, (("message", dict),), _message, _from_message,
               _check_message, early="history", searched="message", holds="message"),
    RecordKind("compacting", CompactionStarted, (("trigger", str),), _compacting,
               _from_started),
    RecordKind("rewrite", Rewriting, (("messages", list),), _rewrite, _from_rewrite,
               _check_rewrite, early="history", whole_history=True, holds="messages",
               sync=True),
    RecordKind("output", OutputStored, (("ref", str), ("text", str)), _output, _from_output,
               early="ref"),
    RecordKind("decision", Compacted, (("decision", dict),), _decision, _from_compacted,
               _check_decision),
    RecordKind("exchange", ExchangeOpened, (("key", str),), _exchange, _from_exchange,
               early="exchange"),
    # a run is written (to disk) before its code starts, so one that kills the process is
    # still in `%nbagent cells` after the restart; its outcome follows when it ends
    RecordKind("code_start", CodeStarting, (("code", str), ("number", int)), _nothing,
               code_start_record, early="skip", sync=True),
    RecordKind("code_run", CodeRan, (("code", str), ("status", str)), _nothing,
               code_run_record, early="skip"),
    # a delegated task: how it ended (the session's branches come back on resume), and
    # each message of its own transcript, which recall searches beside the session's
    RecordKind("branch", BranchFinished, (("number", int), ("task", str), ("result", str)),
               _branch, _from_branch),
    RecordKind("branch_message", BranchMessage, (("branch", int), ("message", dict)),
               _nothing, _from_branch_message, _check_message, early="skip",
               searched="message", origin=_branch_origin),
)
BY_KIND = {row.kind: row for row in KINDS}  # what `_writer`, `_replay`, `_recall`, `_records` read

# The events the archive leaves out on purpose, so a new event is a row above or a line here
# (tests/agent/archive/test_kinds.py fails on one that is neither): what the screen shows
# while it happens (a status line, a notice, a tool starting or finishing, a retry), what a replay
# recomputes (the context state), and what the history records already hold (a proposed
# cell is its tool call's arguments; an undo writes the rewrite it emits; a branch's start
# and steps are its transcript's messages and its end record).
NOT_RECORDED: tuple[type, ...] = (Status, Notice, ToolStarted, ToolFinished, Retrying,
                                  ContextChanged, CellProposed, CompactionUndone,
                                  BranchStarted, BranchProgress)


def record_of(event: object) -> tuple[str, Record] | None:
    """The kind and fields `event` is written as (None: no row records it). Read from
    `BY_KIND` at each call, so a row added there counts at once."""
    for row in BY_KIND.values():
        if row.event is type(event) and row.record is not None:
            return row.kind, row.record(event)
    return None


def is_recorded(event: object) -> bool:
    """Whether a row writes `event` (checked before anything is made of it)."""
    return any(row.event is type(event) and row.record is not None
               for row in BY_KIND.values())


def kind_of(event: type) -> str:
    """The kind an event type is written as."""
    return next(row.kind for row in BY_KIND.values() if row.event is event)


def header_kind() -> str | None:
    """The kind a file starts with (the session's)."""
    return next((row.kind for row in BY_KIND.values() if row.header), None)


def is_header(kind: str) -> bool:
    row = BY_KIND.get(kind)
    return row is not None and row.header


def one_message_kinds() -> list[str]:
    """The kinds whose record adds one message to the history."""
    return [row.kind for row in BY_KIND.values() if row.holds and not row.whole_history]


def newest_message(kind: str, fields: Mapping[str, Any]) -> tuple[bool, Any]:
    """(True, the newest message a record of `kind` leaves in the history) for a kind
    that holds history messages; (False, None) for the others."""
    row = BY_KIND.get(kind)
    if row is None or row.holds is None:
        return False, None
    held = fields.get(row.holds)
    if row.whole_history:
        return True, held[-1] if isinstance(held, list) and held else None
    return True, held


def ref_of(kind: str, fields: Mapping[str, Any]) -> str | None:
    """The ref a record is read back by (a kind the fast path takes back by its `ref`)."""
    row = BY_KIND.get(kind)
    ref = fields.get("ref") if row is not None and row.early == "ref" else None
    return ref if isinstance(ref, str) else None


def table() -> str:
    """The table as text: kind, the event it is written from, its fields."""
    wide = max(len(row.kind) for row in KINDS)
    lines = [f"{'kind':<{wide}} {'written from':<17} fields"]
    for row in KINDS:
        source = row.event.__name__ if row.event is not None else "(direct)"
        names = ", ".join(name for name, _ in row.fields)
        recalled = "  (recall searches it)" if row.searchable else ""
        lines.append(f"{row.kind:<{wide}} {source:<17} {names}{recalled}")
    return "\n".join(lines)
