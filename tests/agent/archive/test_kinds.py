"""The archive's record kinds are one table: it prints, every event row is written from its
event by the session and taken back by replay, every field a row names is checked, and
every kind (a new one too) written before a rewrite is still there on resume."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, get_args

import pytest

import nbagent
from nbagent import Agent, ArchiveError, Settings
from nbagent.agent.archive import (
    BY_KIND,
    KINDS,
    NOT_RECORDED,
    Archive,
    ArchivedOutputs,
    RecordKind,
    ReplayState,
    read_records,
    recall,
    replay,
    table,
)
from nbagent.agent.tools import code_runs
from nbagent.code import PlainRunner
from nbagent.events import Event, MessageAdded
from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, reply
from tests.agent.archive.replaying import every_record
from tests.helpers import nine_sections


def test_the_table_prints_one_line_per_kind_with_its_event() -> None:
    lines = table().splitlines()
    assert len(lines) == 1 + len(KINDS)
    for row, line in zip(KINDS, lines[1:], strict=True):
        assert line.split()[0] == row.kind
        assert (row.event.__name__ if row.event else "(direct)") in line
    assert [row.kind for row in KINDS if row.searchable] == ["message", "branch_message"]


def test_every_event_row_is_written_by_the_session_and_replayed(tmp_path: Path) -> None:
    delegated = [calls(("delegate", {"task": "count the errors"})), reply("20 errors"),
                 reply("There are 20.")]
    agent = Agent(model=ScriptedModel(delegated, default=reply("a long answer " * 60)),
                  namespace={}, builtin_tools=["delegate"],
                  settings=Settings(max_context_tokens=8_192, data_dir=str(tmp_path)),
                  summarize=ScriptedSummarizer(default=nine_sections()))
    agent.chat("how many errors?")
    for turn in range(3):
        agent.chat(f"question {turn} " * 30, exchange=f"cell-{turn}")
    agent.session.store.put("call-x", "a full output " * 100)
    runs = code_runs(agent.events)
    runs.starting(1, "1 + 1")
    runs.record(PlainRunner().run("1 + 1", {}, "agent run 1"), 1)
    assert agent.compact().action == "compacted"
    path = agent.session.archive.path  # type: ignore[union-attr]
    written = {r["kind"] for r in read_records(path)}
    assert {row.kind for row in KINDS} <= written  # every kind of the table, once at least
    got = replay(path)
    assert got.messages == agent.history.messages
    assert got.outputs["call-x"] == "a full output " * 100
    assert set(got.exchanges) == {"cell-0", "cell-1", "cell-2"}
    assert got.undo is not None and got.sequence >= 1
    assert [b["task"] for b in got.branches] == ["count the errors"]
    agent.session.close()


def test_an_event_without_a_row_writes_nothing(tmp_path: Path) -> None:
    agent = Agent(model=ScriptedModel(default=reply("hi")), namespace={}, builtin_tools=False,
                  settings=Settings(data_dir=str(tmp_path)))
    agent.chat("hello")
    path = agent.session.archive.path  # type: ignore[union-attr]
    size = path.stat().st_size
    agent.session.announce_state()  # ContextChanged: no row, no record
    assert path.stat().st_size == size
    agent.session.events.emit(MessageAdded({"role": "user", "content": "by hand"}))
    assert list(read_records(path))[-1]["message"]["content"] == "by hand"
    agent.session.close()


@pytest.mark.parametrize("row", KINDS, ids=[row.kind for row in KINDS])
def test_every_field_a_row_names_is_checked(row: object, tmp_path: Path) -> None:
    kind = row.kind  # type: ignore[attr-defined]
    with Archive("s1", tmp_path) as archive:
        archive.write(kind, {})  # a record without its fields
    with pytest.raises(ArchiveError, match=f"\\({kind}\\) has no valid"):
        list(read_records(archive.path))


SYSTEM = {"role": "system", "content": "You are careful."}
# One record of each kind, as a session writes it (a new row needs its sample here).
SAMPLES: dict[str, dict[str, Any]] = {
    "session": {"model": "a-later-model", "id": "s1", "sequence": 2},
    "message": {"message": {"role": "user", "content": "asked before the rewrite"}},
    "compacting": {"trigger": "manual", "tokens": 900},
    "rewrite": {"messages": [SYSTEM, {"role": "user", "content": "an older rewrite"}]},
    "output": {"ref": "call-7", "text": "a full output " * 40},
    "decision": {"decision": {"action": "failed", "failures": 2}},
    "exchange": {"key": "cell-3", "index": 1},
    "code_start": {"code": "1 + 1", "number": 1},
    "code_run": {"code": "1 + 1", "status": "ok", "outputs": []},
    "branch": {"number": 1, "task": "count the errors", "model": "m", "status": "done",
               "result": "[delegated task 1 (done)]\n20 errors"},
    "branch_message": {"branch": 1, "message": {"role": "assistant", "content": "20 errors"}},
}


def _state(replayed: Any) -> tuple[Any, ...]:
    """What a resumed session takes back, from a `Replay` or a `ReplayState`."""
    outputs = replayed.outputs
    offsets = dict(outputs.offsets if isinstance(outputs, ArchivedOutputs) else outputs)
    return (replayed.session_id, replayed.model, replayed.sequence, replayed.messages,
            offsets, replayed.failures, replayed.exchanges, replayed.undo,
            replayed.branches)


def _written_then_rewritten(tmp_path: Path, kind: str, payload: dict[str, Any]) -> Path:
    """A session, a conversation, the record, then a rewrite (the whole history) and more."""
    history = [SYSTEM, {"role": "user", "content": "hello"},
               {"role": "assistant", "content": "hi"}]
    with Archive("s1", tmp_path) as archive:
        archive.write("session", {"model": "m", "id": "s1", "sequence": 1})
        for message in history:
            archive.write_message(message)
        archive.write(kind, payload)
        archive.write_rewrite([*history, {"role": "user", "content": "after the rewrite"}])
        archive.write_message({"role": "assistant", "content": "the latest answer"})
    return archive.path


def test_every_kind_has_a_sample() -> None:
    assert set(SAMPLES) == {row.kind for row in KINDS}
    # a kind the fast path passes over must have nothing to take back
    assert all(row.replay is BY_KIND["code_run"].replay for row in KINDS if row.early == "skip")


@pytest.mark.parametrize("row", KINDS, ids=[row.kind for row in KINDS])
def test_each_kind_written_then_rewritten_is_still_there_on_resume(row: Any,
                                                                   tmp_path: Path) -> None:
    path = _written_then_rewritten(tmp_path, row.kind, SAMPLES[row.kind])
    assert _state(replay(path)) == _state(every_record(path))


def test_a_new_kind_survives_a_rewrite_with_one_row(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def retitle(state: ReplayState, record: dict[str, Any], offset: int) -> None:
        state.model = record["title"]

    row = RecordKind("retitle", None, (("title", str),), retitle)  # the defaults: replayed
    monkeypatch.setitem(BY_KIND, "retitle", row)
    path = _written_then_rewritten(tmp_path, "retitle", {"title": "renamed"})
    assert replay(path).model == "renamed" == every_record(path).model


def test_recall_searches_the_field_its_row_names(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    row = RecordKind("note", None, (("note", dict),), lambda s, r, o: None, early="skip",
                     searched="note")
    monkeypatch.setitem(BY_KIND, "note", row)
    with Archive("s1", tmp_path) as archive:
        archive.write("session", {"model": "m", "id": "s1", "sequence": 1})
        archive.write_message(SYSTEM)
        archive.write("note", {"note": {"role": "user", "content": "the quarterly ledger"}})
    found = recall(archive.path, "quarterly ledger")
    assert found.startswith("1 archived messages match") and "#1 user: the quarterly ledger" in found


def emitted_event_names() -> set[str]:
    """The class of every event nbagent's code emits as `….emit(SomeEvent(...))`, or as a
    name bound to `SomeEvent(...)` in the same function, read from the source."""
    names: set[str] = set()
    for path in [*Path(nbagent.__file__).parent.rglob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            bound = {target.id: node.value.func.id for node in ast.walk(function)
                     if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                     and isinstance(node.value.func, ast.Name)
                     for target in node.targets if isinstance(target, ast.Name)}
            for call in ast.walk(function):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "emit" and call.args):
                    continue
                argument = call.args[0]
                if isinstance(argument, ast.Call) and isinstance(argument.func, ast.Name):
                    names.add(argument.func.id)
                elif isinstance(argument, ast.Name) and argument.id in bound:
                    names.add(bound[argument.id])
    return names


def test_every_event_is_recorded_by_a_row_or_left_out_on_purpose() -> None:
    engine_events = {kind.__name__ for kind in get_args(Event)}
    emitted = emitted_event_names()
    assert {"ToolStarted", "CodeRan", "MessageAdded"} <= emitted  # the reading finds them
    rows = {row.event.__name__ for row in KINDS if row.event is not None}
    left_out = {kind.__name__ for kind in NOT_RECORDED}
    assert not rows & left_out
    unsorted = (engine_events | emitted) - rows - left_out
    assert not unsorted, (f"{sorted(unsorted)}: give each a row in KINDS or add it to "
                          "NOT_RECORDED (agent/archive/_kinds.py) with the reason")
