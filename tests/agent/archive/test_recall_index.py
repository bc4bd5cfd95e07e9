"""Recall answers from an index built once and brought up to date from where it stopped:
later calls read only what was appended, never the whole archive again."""

from __future__ import annotations

from pathlib import Path

from nbagent.agent.archive import Archive, recall
from nbagent.agent.archive._recall import index_of

SYSTEM = {"role": "system", "content": "You are careful."}


def test_recall_after_the_first_reads_only_what_was_appended(tmp_path: Path) -> None:
    with Archive("s1", tmp_path) as archive:
        archive.write_session("scripted", "s1")
        archive.write_message(SYSTEM)
        for n in range(200):
            archive.write_message({"role": "user", "content": f"question {n} about sales"})
        assert recall(archive, "question 17 ").startswith("1 archived messages match")
        # damage a line already indexed (same length): a full re-read would now fail
        raw = bytearray(archive.path.read_bytes())
        at = raw.index(b"question 50 about")
        raw[at - 3: at - 1] = b"\x00\x00"
        archive.path.write_bytes(bytes(raw))
        archive.write_message({"role": "user", "content": "question 999 about sales"})
        answer = recall(archive, "question 999")
        assert answer.splitlines() == ["1 archived messages match; showing 1 from 0:",
                                       "#201 user: question 999 about sales"]
        assert index_of(archive.path.resolve()).covered == archive.path.stat().st_size


def test_recall_sees_a_new_file_when_the_archive_was_replaced(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with Archive.at(path) as archive:
        archive.write_session("scripted", "a")
        archive.write_message({"role": "user", "content": "old words"})
        assert "#0 user: old words" in recall(path, "old")
    path.unlink()
    with Archive.at(path) as archive:
        archive.write_session("scripted", "a")
        archive.write_message({"role": "user", "content": "new words"})
        assert recall(path, "old").startswith("0 archived messages match")
        assert "#0 user: new words" in recall(path, "new")


def test_a_multi_line_query_matches_as_before(tmp_path: Path) -> None:
    with Archive("s1", tmp_path) as archive:
        archive.write_message({"role": "user", "content": "line one\nline two"})
        archive.write_message({"role": "user", "content": "line one"})
        assert recall(archive, "ONE\nline").startswith("1 archived messages match")
