"""Nothing is ever lost: the archive, recall, undo and resume."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, NbagentError, Settings, tool, validate_messages
from nbagent._archive import ArchiveError, read_records, redact, session_path
from nbagent._exceptions import NbagentWarning
from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, provider_error, reply
from tests.helpers import nine_sections

FAKE_KEY = "sk-test-0123456789abcdefghijklmn"


@tool
def dump(part: int) -> str:
    """Print a lot."""
    return f"part {part}: " + "1.25 3.5 7.75 " * 400


def agent_with(model: ScriptedModel, **options: Any) -> Agent:
    options.setdefault("settings", Settings(max_context_tokens=4_096))
    return Agent(model=model, tools=[dump], namespace={}, model_info=None,
                 summarize=ScriptedSummarizer(default=nine_sections()), **options)


def records(agent: Agent, kind: str) -> list[dict[str, Any]]:
    assert agent.archive is not None
    return [r for r in read_records(agent.archive.path) if r["kind"] == kind]


def busy_session(agent: Agent, turns: int = 6) -> None:
    for turn in range(turns):
        agent.model.steps = [calls(("dump", {"part": turn})), reply(f"part {turn} looks fine " * 30)]  # type: ignore[attr-defined]
        agent.chat(f"question {turn}: look at part {turn}")


def test_every_message_output_and_decision_is_archived_with_private_permissions() -> None:
    agent = agent_with(ScriptedModel())
    busy_session(agent)
    archived = [r["message"] for r in records(agent, "message")]
    assert archived[0]["role"] == "system" and len(archived) == 1 + 6 * 4
    assert records(agent, "decision") and records(agent, "rewrite")  # it compacted
    assert len(agent.history) < len(archived)  # ...and the archive kept everything
    path = agent.archive.path  # type: ignore[union-attr]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_the_rewrite_is_written_before_the_history_changes() -> None:
    agent = agent_with(ScriptedModel())
    seen: list[int] = []
    agent.controller.before_rewrite.append(lambda messages: seen.append(len(records(agent, "rewrite"))))
    busy_session(agent)
    assert seen and all(count >= 1 for count in seen)  # the archive had it first


def test_no_secrets_at_rest_nor_in_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)

    @tool
    def leak() -> str:
        """Echo the environment."""
        return f"OPENAI_API_KEY={os.environ['OPENAI_API_KEY']} Authorization: Bearer abcdefgh12345678"

    model = ScriptedModel([calls(("leak", {})), reply("ok"),
                           provider_error(401, f"Incorrect API key provided: {FAKE_KEY}")])
    agent = agent_with(model)
    agent.add_tool(leak)
    agent.chat("show me")
    with pytest.raises(NbagentError) as caught:
        agent.chat("again")
    assert FAKE_KEY not in str(caught.value) and "[redacted]" in str(caught.value)
    text = agent.archive.path.read_text()  # type: ignore[union-attr]
    assert FAKE_KEY not in text and "abcdefgh12345678" not in text and "[redacted]" in text
    assert redact("key=sk-abcdefghijklmnop") == "key=[redacted]"


def test_an_unwritable_archive_warns_once_and_the_chat_goes_on(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "ro"
    blocked.mkdir()
    (blocked / "sessions").write_text("a file where the folder should be")
    monkeypatch.setenv("NBAGENT_DATA_DIR", str(blocked))
    with pytest.warns(NbagentWarning, match="cannot write its session archive") as caught:
        agent = agent_with(ScriptedModel([reply("fine"), reply("still fine")]))
        assert agent.chat("hi").text == "fine"
        assert agent.chat("again").text == "still fine"
    assert len(caught) == 1


@pytest.mark.parametrize("bad", ["../escape", "a/b", ".hidden", "x" * 200, "-flag"])
def test_a_session_id_with_path_characters_is_refused(bad: str, tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="session id"):
        Agent(model=ScriptedModel(), session_id=bad, namespace={}, model_info=None)
    assert not list(tmp_path.parent.glob("escape*"))


def test_resume_rebuilds_history_outputs_and_breaker_count() -> None:
    agent = agent_with(ScriptedModel())
    busy_session(agent)
    agent.controller._failures = 0
    resumed = Agent.resume(agent.session_id, model=ScriptedModel([reply("welcome back")]),
                           namespace={}, model_info=None, settings=Settings(max_context_tokens=8_192),
                           summarize=ScriptedSummarizer(default=nine_sections()))
    assert resumed.history.messages == agent.history.messages
    assert resumed.store.outputs == agent.store.outputs
    assert resumed.controller.failure_count() == records(agent, "decision")[-1]["decision"]["failures"]
    resumed.chat("where were we?")
    assert records(agent, "message")[-1]["message"] == {"role": "assistant", "content": "welcome back"}


def test_a_truncated_last_line_is_skipped_and_a_corrupted_archive_is_an_error() -> None:
    agent = agent_with(ScriptedModel([reply("one"), reply("two")]))
    agent.chat("first")
    agent.chat("second")
    path = agent.archive.path  # type: ignore[union-attr]
    with path.open("a") as handle:
        handle.write('{"kind": "message", "message": {"role": "us')  # died mid-write
    with pytest.warns(NbagentWarning, match="truncated last line"):
        resumed = Agent.resume(path, model=ScriptedModel(), namespace={}, model_info=None)
    assert resumed.history.messages[-1] == {"role": "assistant", "content": "two"}
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{not json", *lines[1:]]))
    with pytest.raises(ArchiveError, match="line 2 is not valid JSON"):
        Agent.resume(path, model=ScriptedModel(), namespace={}, model_info=None)


def test_undo_restores_the_history_until_a_new_turn() -> None:
    agent = agent_with(ScriptedModel(default=reply("noted, and here is a long analysis " * 40)),
                       settings=Settings(max_context_tokens=8_192))
    for turn in range(3):
        agent.chat(f"question {turn} " * 30)
    before = agent.history.messages
    assert agent.compact().action == "compacted"
    agent.undo_compaction()
    assert agent.history.messages == before
    assert agent.compact().action == "compacted"
    agent.chat("a new turn")
    with pytest.raises(NbagentError, match="went on since \\(2 new messages\\)"):
        agent.undo_compaction()
    validate_messages(agent.history.messages)


def test_recall_finds_what_compaction_removed() -> None:
    model = ScriptedModel()
    agent = agent_with(model)
    busy_session(agent)
    assert not any("part 0: 1.25" in str(m.get("content")) for m in agent.history)
    model.steps = [calls(("recall", {"query": "part 0: 1.25"})), reply("found it")]
    agent.chat("what did part 0 say?")
    found = [m["content"] for m in agent.history if m["role"] == "tool"][-1]
    assert "archived messages match" in found
    number = int(found.split("\n#")[1].split()[0])  # the first hit: the old tool result
    model.steps = [calls(("recall", {"message": number})), reply("ok")]
    agent.chat("show it whole")
    whole = json.loads([m["content"] for m in agent.history if m["role"] == "tool"][-1])
    assert whole["content"].startswith("part 0: 1.25")


def test_the_path_of_a_session_stays_inside_the_data_directory(tmp_path: Path) -> None:
    assert session_path("20261130-abc", tmp_path) == tmp_path / "sessions" / "20261130-abc.jsonl"
