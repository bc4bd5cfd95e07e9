"""Resume restores everything a live session had: the cells' exchanges, the undo point,
the pins, the outputs (the newest in memory, the others read back from disk); a missing
id is an error that writes nothing; "latest" comes from the archives' own records."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, ArchiveError, NbagentError, Settings, tool
from nbagent.agent.archive import latest_session
from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, replay, reply, session_path
from tests.helpers import nine_sections

LONG = "noted, and here is a long analysis " * 40


@tool
def dump(part: int) -> str:
    """Print a lot."""
    return f"part {part}: " + "1.25 3.5 7.75 " * 400


def agent_with(model: ScriptedModel | None = None, **options: Any) -> Agent:
    options.setdefault("settings", Settings(max_context_tokens=8_192))
    return Agent(model=model or ScriptedModel(default=reply("fine")), tools=[dump],
                 namespace={}, builtin_tools=False,
                 summarize=ScriptedSummarizer(default=nine_sections()), **options)


def resumed(agent: Agent, model: ScriptedModel | None = None, **options: Any) -> Agent:
    agent.session.close()
    return Agent.resume(agent.session_id, model=model or ScriptedModel(default=reply("again")),
                        namespace={}, builtin_tools=False, tools=[dump],
                        settings=Settings(max_context_tokens=8_192),
                        summarize=ScriptedSummarizer(default=nine_sections()), **options)


def test_re_running_a_cell_after_resume_replaces_its_exchange() -> None:
    agent = agent_with()
    agent.chat("what is df?", exchange="cell-1")
    agent.chat("and the columns?", exchange="cell-2")
    back = resumed(agent)
    back.chat("what is df, really?", exchange="cell-1")
    assert [m["content"] for m in back.history if m["role"] == "user"] == [
        "and the columns?", "what is df, really?"]
    assert back.session.open_exchange("cell-2", "columns, again") is True
    back.session.close()


def test_undo_works_after_resume_when_nothing_was_added_since() -> None:
    agent = agent_with(ScriptedModel(default=reply(LONG)))
    for turn in range(3):
        agent.chat(f"question {turn} " * 30)
    before = agent.history.messages
    assert agent.compact().action == "compacted"
    compacted = agent.history.messages
    back = resumed(agent)
    assert back.history.messages == compacted
    back.session.undo_compaction()
    assert back.history.messages == before
    assert replay(back.session.archive.path).messages == before  # type: ignore[union-attr]
    with pytest.raises(NbagentError, match="no compaction to undo"):
        back.session.undo_compaction()  # undone once, as live
    back.session.close()


def test_undo_after_resume_is_refused_once_the_conversation_went_on() -> None:
    agent = agent_with(ScriptedModel(default=reply(LONG)))
    for turn in range(3):
        agent.chat(f"question {turn} " * 30)
    assert agent.compact().action == "compacted"
    agent.chat("a new turn")  # the archive knows the undo point is gone
    back = resumed(agent)
    with pytest.raises(NbagentError, match="no compaction to undo"):
        back.session.undo_compaction()
    back.chat("another")
    with pytest.raises(NbagentError):
        back.session.undo_compaction()
    back.session.close()


def test_pins_come_back_and_stay_pinned() -> None:
    agent = agent_with()
    agent.chat("hello")
    agent.pin("the revenue column is net of tax")
    back = resumed(agent)
    assert back.pins() == ["the revenue column is net of tax"]
    back.unpin(0)
    assert back.pins() == []
    back.session.close()


def test_resume_keeps_only_the_newest_outputs_in_memory_and_reads_the_others_back() -> None:
    model = ScriptedModel()
    agent = agent_with(model)
    model.steps = [calls(("dump", {"part": 0})), reply("ok")]
    agent.chat("look at part 0")
    assert agent.session.archive is not None
    for n in range(1, 100):  # a long session's outputs
        agent.session.store.put(f"call-{n}", f"output {n} " * 200)
    held = list(agent.session.store.outputs)
    assert len(held) == agent.session.store.keep == 64
    back = resumed(agent)
    store = back.session.store
    assert list(store.outputs) == held  # what the live session held, no more
    first = [m["tool_call_id"] for m in back.history if m["role"] == "tool"][0]
    assert first not in store.outputs and (store.get(first) or "").startswith("part 0: 1.25")
    assert store.get("call-1") == "output 1 " * 200  # read back from disk by offset
    back.session.close()


def test_resuming_a_missing_id_is_an_error_that_writes_nothing(tmp_path: Path) -> None:
    agent = agent_with()
    agent.chat("the real session")
    agent.session.close()
    with pytest.raises(ArchiveError, match="no archive of session 'nope'"):
        Agent.resume("nope", model=ScriptedModel(), namespace={})
    assert not session_path("nope").exists()
    assert latest_session() == agent.session_id  # not shadowed by an empty file


@pytest.mark.parametrize("bad", ["abc\n", "abc\r", "ab\x00c", "a\tb", "a/b", "a\\b", "abc\n\n"],
                         ids=["newline", "return", "nul", "tab", "slash", "backslash", "two"])
def test_an_id_with_a_control_character_or_separator_fails_validation(bad: str) -> None:
    with pytest.raises(ArchiveError, match="session id"):
        session_path(bad)
    with pytest.raises(ArchiveError):
        Agent.resume(bad, model=ScriptedModel(), namespace={})


def test_latest_comes_from_the_archives_records_not_file_times() -> None:
    first, second = agent_with(session_id="first"), agent_with(session_id="second")
    first.chat("one")
    second.chat("two")
    first.session.close()
    second.session.close()
    path = session_path("first")
    future = path.stat().st_mtime + 86_400  # a clock step, a copy, a backup tool
    os.utime(path, (future, future))
    assert latest_session() == "second"
    back = Agent.resume("first", model=ScriptedModel(), namespace={})  # resuming makes it latest
    back.session.close()
    os.utime(session_path("second"), (future + 10, future + 10))
    assert latest_session() == "first"
