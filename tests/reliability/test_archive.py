"""Nothing is ever lost: the archive, recall, undo and resume; odd text stored losslessly;
one writer per session; the archive on disk kept private and never led astray by a link."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nbagent import (
    Agent,
    ArchiveError,
    NbagentError,
    NbagentWarning,
    Settings,
    tool,
    validate_messages,
)
from nbagent.testing import (
    Archive,
    ScriptedModel,
    ScriptedSummarizer,
    calls,
    provider_error,
    read_records,
    recall,
    replay,
    reply,
    session_path,
)
from tests.helpers import nine_sections

FAKE_KEY = "sk-test-0123456789abcdefghijklmn"
ODD = os.fsdecode(b"caf\xe9.csv")  # what os.listdir gives for a Latin-1 file name
SYSTEM = {"role": "system", "content": "You are careful."}


@tool
def dump(part: int) -> str:
    """Print a lot."""
    return f"part {part}: " + "1.25 3.5 7.75 " * 400


def agent_with(model: ScriptedModel, **options: Any) -> Agent:
    options.setdefault("settings", Settings(max_context_tokens=8_192))
    return Agent(model=model, tools=[dump], namespace={},
                 summarize=ScriptedSummarizer(default=nine_sections()), **options)


def archive_of(agent: Agent) -> Archive:
    assert agent.session.archive is not None
    return agent.session.archive


def records(agent: Agent, kind: str) -> list[dict[str, Any]]:
    return [r for r in read_records(archive_of(agent).path) if r["kind"] == kind]


def busy_session(agent: Agent, turns: int = 6) -> None:
    for turn in range(turns):
        agent.model.steps = [calls(("dump", {"part": turn})), reply(f"part {turn} looks fine " * 30)]  # type: ignore[attr-defined]
        agent.chat(f"question {turn}: look at part {turn}")


@contextmanager
def _no_warnings() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return Path(os.environ["NBAGENT_DATA_DIR"])


@pytest.fixture
def opened(data: Path) -> Iterator[Archive]:
    with Archive("s1") as archive:
        archive.write_session("scripted", "s1")
        archive.write_message(SYSTEM)
        yield archive


# -- everything is kept, and comes back ------------------------------------------------------

def test_every_message_output_and_decision_is_archived_with_private_permissions() -> None:
    agent = agent_with(ScriptedModel())
    busy_session(agent)
    archived = [r["message"] for r in records(agent, "message")]
    assert archived[0]["role"] == "system" and len(archived) == 1 + 6 * 4
    assert records(agent, "decision") and records(agent, "rewrite")  # it compacted
    assert len(agent.history) < len(archived)  # ...and the archive kept everything
    path = archive_of(agent).path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_the_rewrite_is_written_before_the_history_changes() -> None:
    agent = agent_with(ScriptedModel())
    seen: list[int] = []
    original = agent.history.replace

    def replace(messages: Any) -> None:
        seen.append(len(records(agent, "rewrite")))
        original(messages)

    agent.history.replace = replace  # type: ignore[method-assign]
    busy_session(agent)
    assert seen and all(count >= n for n, count in enumerate(seen, 1))  # the archive had it first


def test_replay_gives_the_history_as_it_last_stood(opened: Archive) -> None:
    user = {"role": "user", "content": "hello"}
    opened.write_message(user)
    opened.write_output("call-1", "the full output")
    opened.write_rewrite([SYSTEM, {"role": "user", "content": "[summary]"}])
    opened.write_message({"role": "assistant", "content": "hi"})
    opened.write_decision({"action": "compacted", "failures": 2})
    opened.write("event", {"event": "interrupted"})  # a kind an older version wrote
    opened.write_session("other-model", "s1")  # a resume with another model
    got = replay(opened.path)
    assert got.messages == [SYSTEM, {"role": "user", "content": "[summary]"},
                            {"role": "assistant", "content": "hi"}]
    assert (dict(got.outputs), got.failures, got.model, got.session_id) == (
        {"call-1": "the full output"}, 2, "other-model", "s1")


def test_an_output_comes_back_from_the_archive_also_after_a_reopen(opened: Archive) -> None:
    for n in range(3):
        opened.write_output(f"call-{n}", f"output {n} " * 1_000)
    assert opened.output("call-1") == "output 1 " * 1_000
    assert opened.output("nope") is None
    opened.close()
    with Archive("s1") as again:  # a resumed session finds the old outputs too
        again.write_output("call-9", "new")
        assert again.output("call-2") == "output 2 " * 1_000 and again.output("call-9") == "new"


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
    text = archive_of(agent).path.read_text()
    assert FAKE_KEY not in text and "abcdefgh12345678" not in text and "[redacted]" in text
    assert FAKE_KEY in json.dumps(agent.history.messages)  # the live history is untouched


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
        Archive(bad)
    assert not list(tmp_path.parent.glob("escape*"))


def test_resume_rebuilds_history_outputs_and_breaker_count() -> None:
    agent = agent_with(ScriptedModel())
    busy_session(agent)
    agent.session.close()
    resumed = Agent.resume(agent.session_id, model=ScriptedModel([reply("welcome back")]),
                           namespace={}, settings=Settings(max_context_tokens=8_192),
                           summarize=ScriptedSummarizer(default=nine_sections()))
    assert resumed.history.messages == agent.history.messages
    assert resumed.session.store.outputs == agent.session.store.outputs
    assert resumed.controller.failure_count() == records(agent, "decision")[-1]["decision"]["failures"]
    resumed.chat("where were we?")
    assert records(agent, "message")[-1]["message"] == {"role": "assistant", "content": "welcome back"}


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


def test_recall_pages_newest_first_and_says_when_there_is_nothing(opened: Archive,
                                                                 tmp_path: Path) -> None:
    for n in range(12):
        opened.write_message({"role": "user", "content": f"question {n}"})
    listed = recall(opened, limit=3)
    assert listed.splitlines() == ["13 archived messages match (newest first); showing 3 from 0:",
                                   "#12 user: question 11", "#11 user: question 10",
                                   "#10 user: question 9"]
    assert recall(opened, "QUESTION 1", offset=1, limit=2).splitlines()[1:] == [
        "#11 user: question 10", "#12 user: question 11"]
    assert recall(opened, message=99) == "No archived message 99; there are 13."
    assert recall(None) == recall(tmp_path / "none.jsonl") == "No session archive to recall from."


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


def test_the_path_of_a_session_stays_inside_the_data_directory(tmp_path: Path) -> None:
    assert session_path("20261130-abc", tmp_path) == tmp_path / "sessions" / "20261130-abc.jsonl"


# -- any text is data (issue 11, item 3) -------------------------------------------------------

def test_lone_surrogates_are_stored_losslessly_and_come_back_identical(opened: Archive) -> None:
    odd = f"open {ODD} and \ud800 and 東京 🙂 \u2028 next"
    arguments = json.dumps({"path": ODD})
    messages = [
        {"role": "user", "content": odd},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file",
                                                          "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"{ODD}: 3 rows"},
    ]
    with _no_warnings():
        for message in messages:
            opened.write_message(message)
        opened.write_output("c1", odd)
    opened.path.read_bytes().decode("utf-8")  # the file is clean UTF-8
    got = replay(opened.path)
    assert got.messages == [SYSTEM, *messages] and got.outputs == {"c1": odd}
    assert opened.output("c1") == odd
    assert ODD in recall(opened, "caf")
    assert json.loads(recall(opened, message=1)) == messages[0]


def test_odd_text_through_chat_and_resume() -> None:
    @tool
    def listing() -> str:
        """List the folder."""
        return f"{ODD}\nsales.csv"

    agent = agent_with(ScriptedModel([calls(("listing", {})), reply(f"found {ODD}")]))
    agent.add_tool(listing)
    with _no_warnings():
        agent.chat(f"what is in {ODD}?")
    agent.session.close()
    resumed = Agent.resume(agent.session_id, model=ScriptedModel([reply("ok")]), namespace={})
    assert resumed.history.messages == agent.history.messages
    resumed.chat("and now?")


# -- damaged archives: a clear error naming the line (issue 11, item 8) --------------------

def test_a_truncated_last_line_is_skipped_and_a_corrupted_archive_is_an_error() -> None:
    agent = agent_with(ScriptedModel([reply("one"), reply("two")]))
    agent.chat("first")
    agent.chat("second")
    agent.session.close()
    path = archive_of(agent).path
    with path.open("a") as handle:
        handle.write('{"kind": "message", "message": {"role": "us')  # died mid-write
    with pytest.warns(NbagentWarning, match="truncated last line"):
        resumed = Agent.resume(path, model=ScriptedModel(), namespace={})
    assert resumed.history.messages[-1] == {"role": "assistant", "content": "two"}
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{not json", *lines[1:]]))
    with pytest.raises(ArchiveError, match="line 2 is not valid JSON"):
        replay(path)


@pytest.mark.parametrize(("line", "problem"), [
    (b'{"kind": "message", "message": {"role": "user", "content": "caf\xe9"}}',
     "line 3 is not UTF-8 text"),
    (b'["kind", "message"]', "line 3 is not an archive record"),
    (b'{"message": {"role": "user"}}', "line 3 is not an archive record"),
    (b'{"kind": "message"}', "line 3 \\(message\\) has no valid 'message'"),
    (b'{"kind": "message", "message": {"content": "no role"}}', "line 3 holds a message without"),
    (b'{"kind": "rewrite", "messages": "not a list"}', "line 3 \\(rewrite\\) has no valid"),
    (b'{"kind": "rewrite", "messages": [1, 2]}', "line 3 holds a rewrite that is not"),
    (b'{"kind": "output", "ref": 7, "text": "x"}', "line 3 \\(output\\) has no valid 'ref'"),
    (b'{"kind": "decision", "decision": {"failures": "two"}}', "line 3 holds a decision"),
    (b'{"kind": "session", "id": "x"}', "line 3 \\(session\\) has no valid 'model'"),
], ids=["not UTF-8", "not an object", "no kind", "no message", "no role", "rewrite not a list",
        "rewrite of non-messages", "bad ref", "bad failure count", "session without model"])
def test_a_tampered_archive_is_an_archive_error_naming_the_line(opened: Archive, line: bytes,
                                                               problem: str) -> None:
    opened.close()
    with opened.path.open("ab") as handle:
        handle.write(line + b"\n" + b'{"kind": "message", "message": {"role": "user", "content": "after"}}\n')
    with pytest.raises(ArchiveError, match=problem) as caught:
        replay(opened.path)
    assert "s1.jsonl" in str(caught.value)
    assert recall(opened.path).startswith("The session archive cannot be read: ")


def test_a_damaged_last_line_that_was_written_whole_is_an_error_too(opened: Archive) -> None:
    opened.close()
    with opened.path.open("ab") as handle:
        handle.write(b'{"kind": "message", "message": {"role": "user", "content": "caf\xe9"}}\n')
    with pytest.raises(ArchiveError, match="line 3 is not UTF-8 text"):
        replay(opened.path)


def test_an_archive_without_a_session_cannot_be_resumed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ArchiveError, match="holds no session"):
        replay(empty)
    with pytest.raises(ArchiveError, match="cannot read"):
        replay(tmp_path / "missing.jsonl")


# -- an archive anywhere (issue 11, item 8) ---------------------------------------------------

def test_an_archive_outside_a_sessions_folder_is_appended_to_in_place(tmp_path: Path,
                                                                     data: Path) -> None:
    elsewhere = tmp_path / "kept" / "analysis.jsonl"
    elsewhere.parent.mkdir()
    with Archive.at(elsewhere) as archive:
        archive.write_session("scripted", "analysis")
        archive.write_message(SYSTEM)
    with Archive.at(elsewhere) as again:
        again.write_message({"role": "user", "content": "more"})
    assert [m["content"] for m in replay(elsewhere).messages] == [SYSTEM["content"], "more"]
    assert not (data / "sessions").exists() or not list((data / "sessions").iterdir())
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o600


def test_resume_from_a_file_anywhere_appends_to_that_file(tmp_path: Path, data: Path) -> None:
    agent = agent_with(ScriptedModel([reply("one")]))
    agent.chat("first")
    agent.session.close()
    moved = tmp_path / "backup.jsonl"
    moved.write_bytes(archive_of(agent).path.read_bytes())
    archive_of(agent).path.unlink()
    resumed = Agent.resume(moved, model=ScriptedModel([reply("two")]), namespace={})
    resumed.chat("second")
    assert [m["content"] for m in replay(moved).messages][-2:] == ["second", "two"]
    assert not list((data / "sessions").iterdir())


# -- one writer per session (issue 11, item 7) -----------------------------------------------

def test_a_second_writer_on_a_session_gets_a_clear_error_until_the_first_closes(
        opened: Archive) -> None:
    with pytest.raises(ArchiveError, match="session s1 is open in another agent or process"):
        Archive("s1")
    with pytest.raises(ArchiveError, match="open in another agent"):
        Archive.at(opened.path)
    opened.close()
    opened.close()  # idempotent
    with Archive("s1") as taken_over:
        taken_over.write_message({"role": "user", "content": "mine now"})
    assert replay(opened.path).messages[-1]["content"] == "mine now"


def test_a_write_after_close_warns_instead_of_writing_elsewhere(opened: Archive) -> None:
    opened.close()
    with pytest.warns(NbagentWarning, match="was closed"):
        opened.write_message({"role": "user", "content": "late"})
    assert replay(opened.path).messages == [SYSTEM]


def test_two_agents_on_one_session_id_do_not_interleave() -> None:
    first = agent_with(ScriptedModel([reply("one")]), session_id="shared")
    first.chat("hello")
    second = agent_with(ScriptedModel([reply("two")]), session_id="shared")
    with pytest.raises(ArchiveError, match="session shared is open in another agent"):
        second.chat("hello too")
    first.session.close()
    resumed = Agent.resume("shared", model=ScriptedModel([reply("three")]), namespace={})
    resumed.chat("again")
    assert [m["role"] for m in replay(archive_of(first).path).messages].count("system") == 1


def test_another_process_cannot_take_a_session_this_one_holds(opened: Archive, data: Path) -> None:
    script = ("from nbagent import ArchiveError\nfrom nbagent.testing import Archive\n"
              "try:\n    Archive('s1')\nexcept ArchiveError as error:\n    print(error)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "NBAGENT_DATA_DIR": str(data),
                                 "LITELLM_LOCAL_MODEL_COST_MAP": "True"}, timeout=120)
    assert "session s1 is open in another agent or process" in result.stdout, result.stderr


# -- the archive on disk (issue 12) -----------------------------------------------------------

def test_a_planted_symlink_is_refused_and_its_target_untouched(data: Path, tmp_path: Path) -> None:
    (data / "sessions").mkdir(parents=True)
    target = tmp_path / "outside.txt"
    target.write_text("precious\n")
    (data / "sessions" / "planted.jsonl").symlink_to(target)
    with pytest.raises(ArchiveError, match="symbolic link"):
        Archive("planted")
    assert target.read_text() == "precious\n"
    with pytest.raises(ArchiveError, match="symbolic link"):
        Archive.at(data / "sessions" / "planted.jsonl")


def test_a_symlinked_sessions_folder_is_refused(data: Path, tmp_path: Path) -> None:
    data.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (data / "sessions").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ArchiveError, match="symbolic link"):
        Archive("s2")
    assert not list((tmp_path / "elsewhere").iterdir())


def test_folders_too_open_are_made_private_and_files_are_0600_whatever_the_umask(
        data: Path) -> None:
    (data / "sessions").mkdir(parents=True)
    os.chmod(data, 0o777)
    os.chmod(data / "sessions", 0o777)
    old = os.umask(0)
    try:
        with Archive("wide") as archive:
            archive.write_message(SYSTEM)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(data / "sessions").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(archive.path).st_mode) == 0o600


def test_a_new_data_folder_is_private_under_umask_zero(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        with Archive("fresh", tmp_path / "new" / "data") as archive:
            archive.write_message(SYSTEM)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "data").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(archive.path).st_mode) == 0o600


def test_an_old_world_readable_session_file_is_tightened(data: Path) -> None:
    path = session_path("old", data)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"kind": "message", "message": SYSTEM}) + "\n")
    os.chmod(path, 0o644)
    with Archive("old"):
        pass
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_session_file_that_is_not_a_regular_file_of_ours_is_refused(data: Path) -> None:
    sessions = data / "sessions"
    sessions.mkdir(parents=True)
    os.mkfifo(sessions / "fifo.jsonl")
    with pytest.raises(ArchiveError, match="not a regular file"):
        Archive("fifo")
    (sessions / "folder.jsonl").mkdir()
    with pytest.raises(ArchiveError, match="not a regular file"):
        Archive("folder")
    (sessions / "linked.jsonl").write_text("")
    os.link(sessions / "linked.jsonl", sessions / "other-name.jsonl")
    with pytest.raises(ArchiveError, match="hard links"):
        Archive("linked")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a file to another user needs root")
def test_files_and_folders_of_another_user_are_refused(data: Path, tmp_path: Path) -> None:
    sessions = data / "sessions"
    sessions.mkdir(parents=True)
    theirs = sessions / "theirs.jsonl"
    theirs.write_text("")
    os.chown(theirs, 12345, 12345)
    with pytest.raises(ArchiveError, match="belongs to another user"):
        Archive("theirs")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(foreign, 12345, 12345)
    with pytest.raises(ArchiveError, match="belongs to another user"):
        Archive("mine", foreign)
