"""The archive's line format: one JSON object per line, `{"kind": ..., fields...}`, encoded
losslessly; reading checks each line against its row in `_kinds.KINDS` and names the
line of any damage. A torn last line (no newline: the process died mid-write) is skipped
with a warning here, and cut by the writer before it appends (`_writer`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from ...engine._exceptions import ArchiveError, NbagentWarning
from ._kinds import BY_KIND
from ._private_files import open_for_reading


def encode(record: Mapping[str, Any]) -> bytes:
    """One JSON line. Text that UTF-8 cannot hold (lone surrogates from undecodable file
    names) is written with \\u escapes, so it reads back exactly as it was."""
    text = json.dumps(record, ensure_ascii=False, default=str)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True, default=str) + "\n").encode("ascii")


class Damaged(ArchiveError):
    """A damaged line, named by its number (`at` renames it once the number is known)."""

    def __init__(self, path: Path, number: int, problem: str) -> None:
        super().__init__(f"{path.name} line {number} {problem}: the archive is corrupted "
                         f"({path})")
        self.path, self.problem = path, problem

    def at(self, number: int) -> Damaged:
        return Damaged(self.path, number, self.problem)


def damaged(path: Path, number: int, problem: str) -> Damaged:
    return Damaged(path, number, problem)


def check(record: Any, path: Path, number: int) -> dict[str, Any]:
    """`record` if it is a valid record of its kind (a kind no row knows is kept: an
    older or newer nbagent wrote it, and replay passes over it)."""
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
        raise damaged(path, number, "is not an archive record")
    row = BY_KIND.get(record["kind"])
    if row is None:
        return record
    for name, kind in row.fields:
        if not isinstance(record.get(name), kind):
            raise damaged(path, number, f"({record['kind']}) has no valid {name!r}")
    problem = row.check(record)
    if problem is not None:
        raise damaged(path, number, problem)
    return record


def read_lines(path: Path, start: int = 0, stop: int | None = None
               ) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(offset, end, record) for each record from byte `start` on (to `stop`), checked. An
    unfinished last line is skipped with a warning; any other damage (bad JSON, bytes that
    are not UTF-8, a record without its fields) is an `ArchiveError` naming the line."""
    try:
        handle = open_for_reading(path)
    except OSError as error:
        raise ArchiveError(f"cannot read the session archive {path}: {error}") from error
    with handle:
        handle.seek(start)
        position, number = start, 1
        for line in handle:
            offset, position = position, position + len(line)
            if stop is not None and offset >= stop:
                return
            if line.strip():
                try:
                    record = parse(line, path, number)
                except _Torn:
                    if handle.read(1):
                        raise damaged(path, _number(handle, start, number),
                                      "is not valid JSON") from None
                    warnings.warn(f"skipped a truncated last line "
                                  f"({_number(handle, start, number)}) of {path.name}",
                                  NbagentWarning, stacklevel=3)
                    return
                except Damaged as error:
                    if start == 0:
                        raise
                    raise error.at(_number(handle, start, number)) from None
                yield offset, position, record
            number += 1


class _Torn(ValueError):
    """A line without its newline that is not valid JSON: cut mid-write, maybe."""


def parse(line: bytes, path: Path, number: int) -> dict[str, Any]:
    """One line's record, checked; `number` names it in the error."""
    try:
        record = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        if not line.endswith(b"\n"):
            raise _Torn() from None
        problem = ("is not UTF-8 text" if isinstance(error, UnicodeDecodeError)
                   else "is not valid JSON")
        raise damaged(path, number, problem) from None
    return check(record, path, number)


def read_checked_at(path: Path, offset: int) -> dict[str, Any] | None:
    """The checked record whose line starts at `offset` (None: a torn last line)."""
    with open_for_reading(path) as handle:
        handle.seek(offset)
        line = handle.readline()
        try:
            return parse(line, path, 1)
        except _Torn:
            return None
        except Damaged as error:
            raise error.at(_number(handle, offset, 1)) from None


def _number(handle: BinaryIO, start: int, number: int) -> int:
    return number + _lines_before(handle, start) if start else number


def _lines_before(handle: BinaryIO, offset: int) -> int:
    """How many lines end before `offset` (to name a damaged line by its number)."""
    handle.seek(0)
    count, left = 0, offset
    while left > 0:
        block = handle.read(min(left, 1 << 20))
        if not block:
            break
        count, left = count + block.count(b"\n"), left - len(block)
    return count


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of an archive file, checked (see `read_lines`)."""
    for _, _, record in read_lines(path):
        yield record


def read_at(path: Path, offset: int) -> dict[str, Any] | None:
    """The record whose line starts at `offset`, or None if there is none there."""
    try:
        with open_for_reading(path) as handle:
            handle.seek(offset)
            record = json.loads(handle.readline().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def last_newline_end(path: Path, size: int) -> int:
    """Where the last complete line of `path` (of `size` bytes) ends: `size` when the
    file ends with a newline (or is empty), else just after the last newline."""
    if size == 0:
        return 0
    with open_for_reading(path) as handle:
        end, chunk = size, 65_536
        while end > 0:
            start = max(0, end - chunk)
            handle.seek(start)
            block = handle.read(end - start)
            if end == size and block.endswith(b"\n"):
                return size
            found = block.rfind(b"\n")
            if found >= 0:
                return start + found + 1
            end = start
    return 0
