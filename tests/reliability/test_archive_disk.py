"""The archive on real disks: a full file system (a 64 KiB tmpfs), a writer killed with
SIGKILL mid-record, and a file deleted, replaced or truncated under a running session.
Whatever happens, the file stays readable, the next successful write leaves it valid,
and recall and resume go on working."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, NbagentWarning, Settings
from nbagent.testing import Archive, ScriptedModel, read_records, recall, replay, reply

SYSTEM = {"role": "system", "content": "You are careful."}


def agent_in(data: Path, **options: Any) -> Agent:
    return Agent(model=ScriptedModel(default=reply("noted")), namespace={},
                 builtin_tools=False, settings=Settings(data_dir=str(data)), **options)


def strictly_valid(path: Path) -> list[dict[str, Any]]:
    """Every line of `path` is a whole record (no torn line, no warning)."""
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), "the archive ends in a torn line"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return list(read_records(path))


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB file system (tmpfs), mounted for this test."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Fill `disk` until at most `leave` bytes are free; the filler file is returned."""
    filler = disk / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
                if free <= leave:
                    break
                handle.write(b"x" * min(4096, free - leave))
                handle.flush()
        except OSError:
            pass
    return filler


@pytest.mark.real
def test_a_full_disk_keeps_the_archive_valid_and_the_next_write_catches_it_up(
        tiny_disk: Path) -> None:
    agent = agent_in(tiny_disk / "data")
    agent.chat("the first question")
    path = agent.session.archive.path  # type: ignore[union-attr]
    filler = fill(tiny_disk, leave=4096)
    with pytest.warns(NbagentWarning, match="cannot write its session archive") as told:
        for turn in range(6):  # each turn more than the disk has left
            assert agent.chat(f"question {turn}: " + "figures 1.25 3.5 " * 400).text == "noted"
            strictly_valid(path)  # never a torn line, whatever ENOSPC cut
    assert len(told) == 1  # one warning, not one per write
    assert agent.session.archive.failed and "No space left" in agent.session.archive.failed  # type: ignore[union-attr]
    archived = replay(path).messages
    assert archived == agent.history.messages[:len(archived)] and len(archived) < len(agent.history)
    filler.unlink()  # space again: the next write brings the archive up to date
    agent.chat("after the disk was freed")
    records = strictly_valid(path)
    assert replay(path).messages == agent.history.messages
    assert agent.session.archive.failed is None  # type: ignore[union-attr]
    assert sum(r["kind"] == "message" for r in records) == len(agent.history)  # nothing twice
    assert "question 5" in recall(path, "question 5")
    agent.session.close()
    resumed = Agent.resume(path, model=ScriptedModel([reply("back")]), namespace={},
                           builtin_tools=False)
    assert resumed.history.messages == agent.history.messages
    assert resumed.chat("still there?").text == "back"
    strictly_valid(path)
    resumed.session.close()


_WRITER = """
import sys
from nbagent.testing import Archive
archive = Archive.at(sys.argv[1])
archive.write_session("scripted", "killed")
archive.write_message({"role": "system", "content": "You are careful."})
archive.write_message({"role": "user", "content": "before the kill"})
print("ready", flush=True)
archive.write_message({"role": "tool", "tool_call_id": "c1", "content": "z" * (8 << 20)})
"""
# 8 MiB: long enough to be caught mid-write (measured at load 9: 4 MiB torn 8 times of 8,
# 1 MiB 4 of 8), short enough to be cheap — the record is scanned for secrets before its
# first byte is written, ~0.16 s of CPU a MiB, so each try at 64 MiB cost ~11 s.


@pytest.mark.real
def test_a_writer_killed_mid_record_leaves_a_torn_line_the_next_writer_cuts(
        tmp_path: Path) -> None:
    for attempt in range(5):  # the kill must land inside the 8 MiB write
        path = tmp_path / f"killed-{attempt}.jsonl"
        child = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)],
                                 stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        whole = path.stat().st_size
        while path.stat().st_size == whole and child.poll() is None:
            time.sleep(0.0005)
        child.send_signal(signal.SIGKILL)
        child.wait()
        if not path.read_bytes().endswith(b"\n"):
            break
    else:
        pytest.fail("five kills never landed mid-write")
    with pytest.warns(NbagentWarning, match="truncated last line"):
        assert replay(path).messages[-1] == {"role": "user", "content": "before the kill"}
    with Archive.at(path) as again:  # a resume: the torn line is cut before appending
        again.write_message({"role": "assistant", "content": "after the kill"})
    records = strictly_valid(path)
    assert [r["message"]["content"] for r in records if r["kind"] == "message"] == [
        "You are careful.", "before the kill", "after the kill"]


def test_a_torn_last_line_is_cut_before_anything_is_appended(tmp_path: Path) -> None:
    agent = agent_in(tmp_path / "data")
    agent.chat("first")
    agent.session.close()
    path = agent.session.archive.path  # type: ignore[union-attr]
    with path.open("ab") as handle:
        handle.write(b'{"kind": "message", "message": {"role": "us')  # died mid-write
    with pytest.warns(NbagentWarning, match="truncated last line"):
        resumed = Agent.resume(path, model=ScriptedModel(default=reply("two")), namespace={},
                               builtin_tools=False)
    resumed.chat("second")
    resumed.chat("third")
    strictly_valid(path)  # the bug was: resume appended right after the torn line
    assert replay(path).messages == resumed.history.messages
    assert "#" in recall(path, "third")
    resumed.session.close()


@pytest.mark.parametrize("what", ["deleted", "replaced", "truncated"])
def test_an_archive_lost_under_a_running_session_goes_on_in_a_new_file(
        tmp_path: Path, what: str) -> None:
    agent = agent_in(tmp_path / "data")
    agent.chat("the question before", exchange="cell-1")
    path = agent.session.archive.path  # type: ignore[union-attr]
    if what == "deleted":
        path.unlink()
    elif what == "replaced":
        path.unlink()
        path.write_text('{"kind": "message", "message": {"role": "user", "content": "theirs"}}\n')
    else:
        with path.open("r+b") as handle:
            handle.truncate(40)
    with pytest.warns(NbagentWarning, match=f"was {what} while the session ran") as told:
        agent.chat("the question after")
        agent.chat("and one more")
    assert len(told) == 1
    records = strictly_valid(path)
    assert records[0]["kind"] == "session"  # a new file, starting with a full snapshot
    assert replay(path).messages == agent.history.messages
    assert "the question before" in recall(path, "question before")
    aside = [p for p in path.parent.iterdir() if p.name.startswith(f"{path.name}.{what}-")]
    assert len(aside) == (0 if what == "deleted" else 1)  # nothing of what was there is lost
    if what == "replaced":
        assert "theirs" in aside[0].read_text()
    agent.session.close()
    resumed = Agent.resume(path, model=ScriptedModel(default=reply("back")), namespace={},
                           builtin_tools=False)
    assert resumed.history.messages == agent.history.messages
    resumed.chat("the question before, again", exchange="cell-1")  # the cell's key survived
    assert [m["content"] for m in resumed.history if m["role"] == "user"] == [
        "the question after", "and one more", "the question before, again"]
    resumed.session.close()


def test_a_plain_archive_lost_under_it_starts_its_new_file_with_the_session(
        tmp_path: Path) -> None:
    with Archive("s1", tmp_path) as archive:
        archive.write_session("scripted", "s1")
        archive.write_message(SYSTEM)
        archive.path.unlink()
        with pytest.warns(NbagentWarning, match="was deleted"):
            archive.write_message({"role": "user", "content": "after"})
        lines = [json.loads(line) for line in archive.path.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["session", "message"]
    assert lines[0]["model"] == "scripted"
