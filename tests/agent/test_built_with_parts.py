"""Objects receive what they need when they are built, not by assignment afterwards: a
session's output store has its loader (the session's archive, read at each call) from the
start. That no module assigns a hook into another object is checked in
tests/agent/archive/test_written_one_way.py."""

from __future__ import annotations

from pathlib import Path

import nbagent
from nbagent.testing import ScriptedModel, reply


def agent_in(folder: Path, *, archive: bool = True) -> nbagent.Agent:
    return nbagent.Agent(model=ScriptedModel(default=reply("fine")), builtin_tools=False,
                         namespace={}, archive=archive,
                         settings=nbagent.Settings(data_dir=str(folder)))


def test_the_store_reads_back_from_the_archive_with_the_loader_it_was_built_with(
        tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    store = agent.session.store
    loader = store.loader
    assert loader is not None  # before the archive opens: it is read at each call
    assert loader("call-0") is None  # nothing archived yet, and nothing opened for it
    assert agent.session.archive is None
    for n in range(store.keep + 6):  # the first outputs leave memory once archived
        store.put(f"call-{n}", f"output {n} " * 50)
    assert agent.session.archive is not None and store.loader == loader
    assert "call-0" not in store.outputs and store.get("call-0") == "output 0 " * 50
    agent.session.close()


def test_a_session_without_an_archive_keeps_every_output(tmp_path: Path) -> None:
    agent = agent_in(tmp_path, archive=False)
    store = agent.session.store
    for n in range(store.keep + 6):
        store.put(f"call-{n}", f"output {n}")
    assert len(store.outputs) == store.keep + 6  # nothing could read a dropped one back
    assert store.get("call-0") == "output 0" and not list(tmp_path.rglob("*.jsonl"))


def test_an_archive_attached_later_lets_old_outputs_leave_memory(tmp_path: Path) -> None:
    """Built without an archive, then given one (`attach_archive`, as bench/soak.py does):
    from then on the store drops what the archive can give back, so RAM stays flat."""
    from nbagent.agent.archive import Archive

    agent = agent_in(tmp_path, archive=False)
    session = agent.session
    session.attach_archive(lambda: Archive(session.id, tmp_path))
    store = session.store
    for n in range(3 * store.keep):
        store.put(f"call-{n}", f"output {n} " * 50)
    assert len(store.outputs) == store.keep
    assert store.get("call-0") == "output 0 " * 50  # read back from the archive
    session.close()


def test_a_resumed_session_reads_back_with_the_loader_it_was_built_with(
        tmp_path: Path) -> None:
    agent = agent_in(tmp_path)
    agent.chat("hello")
    for n in range(agent.session.store.keep + 6):
        agent.session.store.put(f"call-{n}", f"output {n} " * 50)
    agent.session.close()
    back = nbagent.Agent.resume(agent.session_id, model=ScriptedModel(default=reply("again")),
                                builtin_tools=False, namespace={},
                                settings=nbagent.Settings(data_dir=str(tmp_path)))
    store = back.session.store
    assert store.loader is not None and "call-0" not in store.outputs
    assert store.get("call-0") == "output 0 " * 50
    back.chat("and again")
    assert back.session.archive is not None
    assert back.session.archive.path == agent.session.archive.path  # type: ignore[union-attr]
    assert len(list(tmp_path.rglob("*.jsonl"))) == 1  # no second file was opened
    back.session.close()


def test_the_controller_asks_the_answers_the_session_reads_its_window_from(
        tmp_path: Path) -> None:
    """One protocol for the model questions: the session's answers (the agent's, with the
    session's learned limit) are what its controller asks, not a session re-wrapping them."""
    agent = agent_in(tmp_path, archive=False)
    session = agent.session
    assert session.controller.questions is session.answers
    before = session.window()
    session.learn_window(5_000)
    assert session.controller.window() is session.window()
    assert session.window().raw_window == 5_000 != before.raw_window
    assert session.controller.thresholds().window.raw_window == 5_000
