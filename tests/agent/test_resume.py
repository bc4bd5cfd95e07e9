"""Resuming a session from its archive (`_resume`): by id in the sessions folder a new agent
uses (the same folder, whichever way it was set), or by an archive file's path anywhere,
whose later records go to that same file."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbagent
from nbagent import Agent, Settings
from nbagent.testing import ScriptedModel, reply


def test_resuming_an_archive_outside_the_sessions_folder_appends_to_that_file(
        tmp_path: Path) -> None:
    agent = Agent(model=ScriptedModel([reply("first")]), namespace={},
                  settings=Settings(data_dir=str(tmp_path / "data")))
    agent.chat("remember 42")
    assert agent.session.archive is not None
    moved = tmp_path / "kept" / "analysis.jsonl"
    moved.parent.mkdir()
    agent.session.close()
    agent.session.archive.path.rename(moved)
    resumed = Agent.resume(moved, model=ScriptedModel([reply("second")]), namespace={})
    resumed.chat("and now?")
    resumed.session.close()
    assert not list((tmp_path / "data").rglob("*.jsonl"))  # nothing written elsewhere
    from nbagent.testing import replay

    assert [m["content"] for m in replay(moved).messages if m["role"] == "assistant"] == [
        "first", "second"]


def test_a_new_agent_and_its_resume_use_the_same_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NBAGENT_DATA_DIR", raising=False)
    agent = nbagent.Agent(model=ScriptedModel([reply("hello")]), builtin_tools=False,
                          settings={"data_dir": "~/kept"}, namespace={})
    agent.chat("hi")
    session = agent.session.id
    agent.close()
    assert (tmp_path / "kept" / "sessions" / f"{session}.jsonl").is_file()
    again = nbagent.Agent.resume(session, model=ScriptedModel([]), builtin_tools=False,
                                 settings={"data_dir": "~/kept"}, namespace={})
    assert [m["content"] for m in again.session.history.messages if m["role"] != "system"] \
        == ["hi", "hello"]
    again.close()
