"""Where archives live and which one an id means (`nbagent.agent.archive._paths`): the data
folder (the setting, else NBAGENT_DATA_DIR, else XDG's data folder), session ids of letters,
digits and `_ . -` only, a session's file under the folder's `sessions/`, and the latest
session read from the archives' own session records (their `sequence`), not file times."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nbagent.agent.archive import (
    Archive,
    ArchiveError,
    check_session_id,
    data_dir,
    latest_session,
    new_session_id,
    session_path,
)


@pytest.mark.parametrize("session_id", ["s1", "2026-12-04_run.3", "A" * 100])
def test_an_id_of_letters_digits_and_dot_dash_underscore_is_its_own_file(
        tmp_path: Path, session_id: str) -> None:
    assert check_session_id(session_id) == session_id
    assert session_path(session_id, tmp_path) == tmp_path / "sessions" / f"{session_id}.jsonl"


@pytest.mark.parametrize("session_id", ["", "../s1", "a/b", "a\\b", ".hidden", "-flag", "s1\n",
                                        "tab\there", "A" * 101],
                         ids=["empty", "dot-dot", "slash", "backslash", "dot-first",
                              "dash-first", "trailing-newline", "control", "too-long"])
def test_an_id_with_path_or_control_characters_is_refused(tmp_path: Path,
                                                          session_id: str) -> None:
    with pytest.raises(ArchiveError, match="may hold only letters, digits"):
        check_session_id(session_id)
    with pytest.raises(ArchiveError, match="may hold only letters, digits"):
        session_path(session_id, tmp_path)


def test_a_new_id_is_a_valid_one_and_not_repeated() -> None:
    made = {new_session_id() for _ in range(20)}
    assert len(made) == 20 and all(check_session_id(made_id) for made_id in made)


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


@pytest.mark.parametrize("xdg", ["relative/data", "./data", "", "  "])
def test_an_xdg_data_home_that_is_not_absolute_is_ignored(
        xdg: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_DATA_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert data_dir() == tmp_path / ".local" / "share" / "nbagent"


def test_the_latest_session_is_the_highest_sequence_whatever_the_file_times(
        tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="No session archives"):
        latest_session(tmp_path)
    for session_id in ("first", "second"):
        with Archive(session_id, tmp_path) as archive:
            archive.write_session("scripted", session_id)
    later = time.time() + 3_600  # the older file looks newer: copied, or the clock stepped
    os.utime(session_path("first", tmp_path), (later, later))
    assert latest_session(tmp_path) == "second"
    with Archive("first", tmp_path) as archive:  # resumed: its new session record is latest
        archive.write_session("scripted", "first")
    assert latest_session(tmp_path) == "first"
