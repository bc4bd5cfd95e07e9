"""Answers that have one place: where sessions are kept (one function, `data_dir`, whichever
door asks — a new agent, a resume, the file tools' refusal). That a new agent and its resume
use the same folder is tests/agent/test_resume.py's; whether the chat model is the bundled
SmolLM2, tests/agent/test_agent.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbagent.agent.archive import data_dir


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
