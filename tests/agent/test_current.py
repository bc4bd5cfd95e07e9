"""The kernel's current agent (`nbagent.current()`): one per kernel, and in a notebook the
conversation that notebook last had, continued after a kernel restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import nbagent
from nbagent.agent import _current, linked_session
from nbagent.testing import ScriptedModel


@pytest.fixture(autouse=True)
def _no_current() -> Iterator[None]:
    _current._current = None
    yield
    if _current._current is not None:
        _current._current.session.close()
    _current._current = None


def restart_kernel() -> None:
    """What a kernel restart does to the registry: the agent and its archive lock go."""
    assert _current._current is not None
    _current._current.session.close()
    _current._current = None


def model() -> ScriptedModel:
    return ScriptedModel(default="noted")


def test_outside_a_notebook_one_agent_per_kernel_and_nothing_is_linked(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    first = nbagent.current(model=model())
    assert nbagent.current() is first
    first.chat("hello")
    restart_kernel()
    again = nbagent.current(model=model())
    assert [m["content"] for m in again.history.messages if m["role"] == "user"] == []
    assert not (tmp_path / "nbagent-data" / "notebooks").exists()


def test_reopening_a_notebook_continues_its_conversation_with_a_notice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "work/sales.ipynb")
    first = nbagent.current(model=model())
    first.chat("Load sales.csv into sales_df")
    session_id = first.session_id
    restart_kernel()
    again = nbagent.current(model=model())
    assert again.session_id == session_id
    assert any(m.get("content") == "Load sales.csv into sales_df" for m in again.history)
    notice = again.take_notice() or ""
    assert "continuing this notebook's conversation" in notice
    assert "nbagent.new_session()" in notice and "%" not in notice
    again.chat("and the mean revenue?")  # goes on in the same archive
    restart_kernel()
    third = nbagent.current(model=model())
    users = [m["content"] for m in third.history if m["role"] == "user"]
    assert users[-2:] == ["Load sales.csv into sales_df", "and the mean revenue?"]


def test_a_new_session_becomes_the_notebooks_conversation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "sales.ipynb")
    nbagent.current(model=model()).chat("the old question")
    fresh = nbagent.current(new=True, model=model())
    fresh.chat("the new question")
    restart_kernel()
    again = nbagent.current(model=model())
    assert again.session_id == fresh.session_id
    assert [m["content"] for m in again.history if m["role"] == "user"][-1] == "the new question"
    assert not any(m.get("content") == "the old question" for m in again.history)


def test_a_renamed_or_copied_notebook_starts_its_own_conversation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "sales.ipynb")
    nbagent.current(model=model()).chat("about sales")
    restart_kernel()
    monkeypatch.setenv("JPY_SESSION_NAME", "sales-copy.ipynb")
    copy = nbagent.current(model=model())
    assert not any(m.get("content") == "about sales" for m in copy.history)
    assert copy.take_notice() is None or "continuing" not in (copy.take_notice() or "")


def test_a_notebook_whose_archive_is_gone_starts_fresh(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "sales.ipynb")
    agent = nbagent.current(model=model())
    agent.chat("hello")
    archive = agent.session.archive
    assert archive is not None
    restart_kernel()
    archive.path.unlink()
    again = nbagent.current(model=model())
    assert again.session_id != agent.session_id and len(again.history) == 1
    assert linked_session("sales.ipynb") == again.session_id


def test_a_conversation_another_kernel_holds_is_not_taken(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "sales.ipynb")
    holder = nbagent.current(model=model())
    holder.chat("hello")
    _current._current = None  # another kernel still holds `holder`'s archive open
    try:
        other = nbagent.current(model=model())
        assert other.session_id != holder.session_id
    finally:
        holder.session.close()


def test_nbagent_new_session_in_a_notebook_is_what_the_notebook_continues(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "sales.ipynb")
    nbagent.current(model=model()).chat("the old question")
    fresh = nbagent.new_session(model=model())
    fresh.chat("asked after nbagent.new_session()")
    restart_kernel()
    assert nbagent.current(model=model()).session_id == fresh.session_id


def test_a_notebooks_pointer_lives_in_the_agents_own_data_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # beside the archive it names, not in the environment's folder
    monkeypatch.setenv("JPY_SESSION_NAME", "sales.ipynb")
    own = tmp_path / "own-data"
    agent = nbagent.new_session(model=model(), settings={"data_dir": str(own)})
    agent.chat("kept in my own folder")
    assert [p.parent for p in own.glob("notebooks/*.json")] == [own / "notebooks"]
    assert not (tmp_path / "nbagent-data" / "notebooks").exists()
    assert linked_session("sales.ipynb", own) == agent.session_id
    assert linked_session("sales.ipynb") is None
    restart_kernel()
    found = linked_session("sales.ipynb", own)
    assert found is not None
    again = nbagent.Agent.resume(found, model=model(), settings={"data_dir": str(own)})
    try:
        assert any(m.get("content") == "kept in my own folder" for m in again.history)
    finally:
        again.session.close()
