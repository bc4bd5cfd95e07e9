"""The archive's record kinds are one table: it prints, every event row is written from its
event by the session and taken back by replay, and every field a row names is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbagent import Agent, ArchiveError, Settings
from nbagent.agent.archive._archive import KINDS, Archive, read_records, replay, table
from nbagent.agent.tools._code_runner import PlainRunner
from nbagent.agent.tools._run_code import code_runs
from nbagent.engine._events import MessageAdded
from nbagent.testing import ScriptedModel, ScriptedSummarizer, reply
from tests.helpers import nine_sections


def test_the_table_prints_one_line_per_kind_with_its_event() -> None:
    lines = table().splitlines()
    assert len(lines) == 1 + len(KINDS)
    for row, line in zip(KINDS, lines[1:], strict=True):
        assert line.split()[0] == row.kind
        assert (row.event.__name__ if row.event else "(direct)") in line
    assert [row.kind for row in KINDS if row.searchable] == ["message"]


def test_every_event_row_is_written_by_the_session_and_replayed(tmp_path: Path) -> None:
    agent = Agent(model=ScriptedModel(default=reply("a long answer " * 60)), namespace={},
                  builtin_tools=False, settings=Settings(max_context_tokens=8_192,
                                                         data_dir=str(tmp_path)),
                  summarize=ScriptedSummarizer(default=nine_sections()))
    for turn in range(3):
        agent.chat(f"question {turn} " * 30, exchange=f"cell-{turn}")
    agent.session.store.put("call-x", "a full output " * 100)
    code_runs(agent.events).record(PlainRunner().run("1 + 1", {}, "agent run 1"))
    assert agent.compact().action == "compacted"
    path = agent.session.archive.path  # type: ignore[union-attr]
    written = {r["kind"] for r in read_records(path)}
    assert {row.kind for row in KINDS} <= written  # every kind of the table, once at least
    got = replay(path)
    assert got.messages == agent.history.messages
    assert got.outputs["call-x"] == "a full output " * 100
    assert set(got.exchanges) == {"cell-0", "cell-1", "cell-2"}
    assert got.undo is not None and got.sequence >= 1
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
