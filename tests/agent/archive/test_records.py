"""The archive's line format (`nbagent.agent.archive._records`): one JSON object per line, read
back with each line's offsets and checked against its kind's row; a torn last line (the
process died mid-write) is skipped with a warning naming it, and any other damage — bad
JSON, bytes that are not UTF-8, a record without its fields — is an error naming the line,
counted from the file's start even when reading starts later. A kind no row knows is kept."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nbagent import NbagentWarning
from nbagent.agent.archive import ArchiveError, read_lines, read_records


def line(content: str) -> bytes:
    return (json.dumps({"kind": "message", "message": {"role": "user", "content": content}})
            + "\n").encode()


def test_each_record_comes_back_with_where_its_line_starts_and_ends(tmp_path: Path) -> None:
    first, second = line("one"), line("two")
    path = tmp_path / "s.jsonl"
    path.write_bytes(first + b"\n" + second)  # a blank line is passed over
    found = list(read_lines(path))
    assert [(offset, end) for offset, end, _ in found] == [
        (0, len(first)), (len(first) + 1, len(first) + 1 + len(second))]
    assert [r["message"]["content"] for _, _, r in found] == ["one", "two"]
    assert [r["message"]["content"] for r in read_lines_from(path, len(first) + 1)] == ["two"]


def read_lines_from(path: Path, start: int) -> list[dict[str, object]]:
    return [record for _, _, record in read_lines(path, start)]


def test_a_torn_last_line_is_skipped_with_a_warning_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(line("one") + line("two") + line("three")[:20])
    with pytest.warns(NbagentWarning, match=r"skipped a truncated last line \(3\) of s.jsonl"):
        records = list(read_records(path))
    assert [r["message"]["content"] for r in records] == ["one", "two"]


@pytest.mark.parametrize(("bad", "problem"), [
    (b"not json\n", "line 2 is not valid JSON"),
    (b'{"kind": "message", "message": "caf\xe9"}\n', "line 2 is not UTF-8 text"),
    (b'{"kind": "message"}\n', "line 2 (message) has no valid 'message'"),
    (b'["a list"]\n', "line 2 is not an archive record"),
], ids=["bad-json", "not-utf8", "missing-field", "not-a-record"])
def test_a_damaged_line_is_an_error_naming_its_number(tmp_path: Path, bad: bytes,
                                                       problem: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(line("one") + bad + line("three"))
    with pytest.raises(ArchiveError, match="^" + re.escape(f"s.jsonl {problem}: ")):
        list(read_records(path))


def test_a_damaged_line_is_named_from_the_file_s_start_when_reading_starts_later(
        tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    first, second = line("one"), line("two")
    path.write_bytes(first + second + b"not json\n")
    with pytest.raises(ArchiveError, match=r"^s\.jsonl line 3 is not valid JSON"):
        list(read_lines(path, len(first)))


def test_a_kind_no_row_knows_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"kind": "from_a_newer_nbagent", "x": 1}\n' + line("one"))
    assert [r["kind"] for r in read_records(path)] == ["from_a_newer_nbagent", "message"]


def test_a_missing_archive_is_an_error_that_says_so(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="cannot read the session archive"):
        list(read_records(tmp_path / "gone.jsonl"))
