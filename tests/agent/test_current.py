"""The kernel's current agent (`nbagent.current()`): one per kernel, and in a notebook the
conversation that notebook last had, continued after a kernel restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import nbagent
from nbagent.agent import kernel_agent, linked_session
from nbagent.testing import ScriptedModel


@pytest.fixture(autouse=True)
def _no_current() -> Iterator[None]:
    nbagent.set_current(None)
    yield
    left = kernel_agent()
    if left is not None:
        left.session.close()
    nbagent.set_current(None)


def restart_kernel() -> None:
    """What a kernel restart does to the registry: the agent and its archive lock go."""
    agent = kernel_agent()
    assert agent is not None
    agent.session.close()
    nbagent.set_current(None)


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
    nbagent.set_current(None)  # another kernel still holds `holder`'s archive open
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


def saved(path: Path, *agents: nbagent.Agent) -> Path:
    """The notebook at `path` as a front end saves it: a chat cell per agent, its meter
    line's output carrying the agent's output metadata."""
    import nbformat

    cells = []
    for agent in agents:
        cell = nbformat.v4.new_code_cell("%%chat\nhello")
        cell.outputs = [nbformat.v4.new_output("display_data", {"text/plain": "meter"},
                                               metadata=agent.output_metadata())]
        cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def users(agent: nbagent.Agent) -> list[str]:
    return [m["content"] for m in agent.history if m["role"] == "user"]


def test_a_notebook_renamed_at_its_first_save_continues_its_conversation(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    untitled = tmp_path / "work" / "Untitled.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(untitled))
    first = nbagent.current(model=model())
    saved(untitled, first)
    first.chat("Load visits.csv into visits")
    first.pin("the key column is Country")
    restart_kernel()
    renamed = untitled.with_name("visits by country.ipynb")
    untitled.rename(renamed)  # the save dialog's rename: the same file, a new name
    monkeypatch.setenv("JPY_SESSION_NAME", str(renamed))
    again = nbagent.current(model=model())
    assert again.session_id == first.session_id
    assert users(again) == ["Load visits.csv into visits"]
    assert again.pins() == ["the key column is Country"]
    notice = again.take_notice() or ""
    assert len(notice.splitlines()) == 1
    assert "continuing this notebook's conversation (1 user messages" in notice
    assert "which it had as Untitled.ipynb" in notice
    assert linked_session(str(renamed)) == first.session_id
    assert linked_session(str(untitled)) is None  # its old name no longer claims it
    again.chat("and by month?")
    restart_kernel()
    assert users(nbagent.current(model=model()))[-1] == "and by month?"


def test_a_moved_notebook_whose_file_was_rewritten_continues_from_its_outputs(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old = tmp_path / "a" / "report.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(old))
    first = nbagent.current(model=model())
    saved(old, first)
    first.chat("the question")
    restart_kernel()
    moved = saved(tmp_path / "b" / "report.ipynb", first)  # another disk: a new file
    old.unlink()
    monkeypatch.setenv("JPY_SESSION_NAME", str(moved))
    assert nbagent.current(model=model()).session_id == first.session_id


def test_a_copy_starts_fresh_and_says_how_to_continue_the_original(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    original = tmp_path / "sales.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(original))
    first = nbagent.current(model=model())
    saved(original, first)
    first.chat("about sales")
    restart_kernel()
    copy = tmp_path / "sales-Copy1.ipynb"
    copy.write_bytes(original.read_bytes())  # File > Duplicate: both claim the conversation
    monkeypatch.setenv("JPY_SESSION_NAME", str(copy))
    fresh = nbagent.current(model=model())
    assert fresh.session_id != first.session_id and users(fresh) == []
    notice = fresh.take_notice() or ""
    assert "this notebook is a copy of sales.ipynb" in notice
    assert f"nbagent.current(resume='{first.session_id}')" in notice
    assert "continuing" not in notice
    fresh.chat("about the copy")
    restart_kernel()
    monkeypatch.setenv("JPY_SESSION_NAME", str(original))  # the original keeps its own
    back = nbagent.current(model=model())
    assert back.session_id == first.session_id and users(back) == ["about sales"]


def test_a_new_notebook_under_a_renamed_ones_old_name_starts_fresh(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    untitled = saved(tmp_path / "Untitled.ipynb")  # File > New makes the file at once
    monkeypatch.setenv("JPY_SESSION_NAME", str(untitled))
    first = nbagent.current(model=model())
    saved(untitled, first)
    first.chat("the first notebook's question")
    restart_kernel()
    untitled.rename(tmp_path / "analysis.ipynb")
    saved(untitled)  # File > New: an empty Untitled.ipynb again
    again = nbagent.current(model=model())
    assert again.session_id != first.session_id and users(again) == []


def test_a_duplicate_opened_while_the_original_lives_says_where_its_conversation_is(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    original = tmp_path / "sales.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(original))
    holder = nbagent.current(model=model())
    saved(original, holder)
    holder.chat("hello")
    nbagent.set_current(None)  # another kernel still holds `holder`'s archive open
    try:
        other = nbagent.current(model=model())
        assert other.session_id != holder.session_id
        notice = other.take_notice() or ""
        assert f"session {holder.session_id}) is open in another kernel" in notice
        assert f"nbagent.current(resume='{holder.session_id}')" in notice
    finally:
        holder.session.close()


def test_past_sessions_are_listed_with_their_notebooks_and_resumed_by_number(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "sales.ipynb"))
    first = nbagent.current(model=model())
    first.chat("Which region sells most?")
    first.chat("and least?")
    second = nbagent.current(new=True, model=model())
    second.chat("Plot revenue by month")
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "visits.ipynb"))
    third = nbagent.current(new=True, model=model())
    third.chat("Which country visits most?")
    listed = nbagent.Agent.sessions()
    assert [s.id for s in listed] == [third.session_id, second.session_id, first.session_id]
    assert [s.first_request for s in listed] == [
        "Which country visits most?", "Plot revenue by month", "Which region sells most?"]
    assert [Path(s.notebook or "").name for s in listed] == [
        "visits.ipynb", "sales.ipynb", "sales.ipynb"]
    assert all(s.started <= s.last for s in listed)
    resumed = nbagent.current(resume=3)
    assert resumed.session_id == first.session_id
    assert users(resumed) == ["Which region sells most?", "and least?"]
    with pytest.raises(nbagent.ArchiveError, match="no session number 9"):
        nbagent.current(resume=9)
