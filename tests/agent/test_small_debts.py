"""Answers that have one place: where sessions are kept (one function, whichever door
asks — a new agent, a resume, the file tools' refusal) and whether the chat model is the
bundled SmolLM2 (the agent says so; the notebook asks it instead of knowing the name)."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbagent
from nbagent.agent.archive import data_dir
from nbagent.testing import ScriptedModel, reply


def test_the_data_folder_is_the_setting_then_the_environment_then_xdg(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == tmp_path / "xdg" / "nbagent"
    monkeypatch.setenv("NBAGENT_DATA_DIR", str(tmp_path / "env"))
    assert data_dir() == tmp_path / "env"
    assert data_dir(str(tmp_path / "set")) == tmp_path / "set"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data_dir("~/kept") == tmp_path / "kept"


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


def test_the_agent_says_whether_its_model_is_the_bundled_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_LOCAL_MODEL_PATH", raising=False)
    assert nbagent.Agent(model="local", archive=False, namespace={}).bundled_model
    assert not nbagent.Agent(model=ScriptedModel([]), archive=False,
                             namespace={}).bundled_model
    gguf = tmp_path / "mine.gguf"
    own = nbagent.Agent(model="local", archive=False, namespace={},
                        settings={"local_model_path": str(gguf)})
    assert not own.bundled_model
