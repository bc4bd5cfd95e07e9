"""The `read_file` tool's body: open a confined file without following any link, refuse
what is not text, and stream one bounded page from its offset. Which paths may be read
is `_confinement`'s decision; this module opens exactly the real path it approved,
walking from `/` one folder at a time with `O_NOFOLLOW` (a link swapped in after the
check makes the open fail, it is never followed), and reads only what the page needs:
a multi-gigabyte file or a one-line 3 MB JSON costs one page, not the file.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ...engine._exceptions import Unreadable
from ._confinement import check_readable, read_roots, secret_file_reason
from ._paging import MAX_PAGE_LINES, PAGE, PageBounds, fitting_prefix

__all__ = ["MAX_PAGE_LINES", "check_readable", "open_confined", "read_roots",
           "read_text_page", "secret_file_reason"]

CHUNK = 1 << 16
COUNT_LIMIT = 8 << 20  # a file up to this size has its lines counted for the page header
_SAMPLE = 8_192  # bytes sampled at the head, middle and tail for NUL bytes
_CHANGED = ("Refused: {shown} changed while it was being opened (a link took the place of a "
            "folder or the file); it was not read.")
_NO_LINK = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def open_confined(resolved: Path, shown: str) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at the real path `resolved`, opened
    with no link followed at any component, and its status. Raises `Unreadable` for a
    folder, a device, a FIFO, a socket, a link, a file with other names, or a missing one."""
    try:
        before = os.lstat(resolved)
    except FileNotFoundError:
        raise Unreadable(f"No file {shown}.") from None
    except OSError as error:
        raise Unreadable(f"Cannot read {shown}: {error.strerror or error}") from None
    if stat.S_ISDIR(before.st_mode):
        raise Unreadable(f"{shown} is a folder, not a file.")
    if stat.S_ISLNK(before.st_mode):
        raise Unreadable(_CHANGED.format(shown=shown))
    if not stat.S_ISREG(before.st_mode):  # never open a device, FIFO or socket at all
        raise Unreadable(f"Refused: {shown} is not a regular file.")
    if os.open not in os.supports_dir_fd:  # no openat here: the final component only
        return _checked(os.open(resolved, os.O_RDONLY | _NO_LINK), shown)
    folder = os.open(resolved.anchor or "/", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in resolved.parts[1:-1]:
            inner = os.open(part, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NO_LINK,
                            dir_fd=folder)
            os.close(folder)
            folder = inner
        descriptor = os.open(resolved.name, os.O_RDONLY | _NO_LINK | getattr(os, "O_NONBLOCK", 0)
                             | getattr(os, "O_NOCTTY", 0), dir_fd=folder)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise Unreadable(_CHANGED.format(shown=shown)) from None
        if error.errno == errno.ENOENT:
            raise Unreadable(f"No file {shown}.") from None
        raise Unreadable(f"Cannot read {shown}: {error.strerror or error}") from None
    finally:
        os.close(folder)
    return _checked(descriptor, shown)


def _checked(descriptor: int, shown: str) -> tuple[int, os.stat_result]:
    """The descriptor and its status when it is a regular file with one name; else it is
    closed and `Unreadable` says why."""
    status = os.fstat(descriptor)
    problem = None
    if not stat.S_ISREG(status.st_mode):
        problem = f"Refused: {shown} is not a regular file."
    elif status.st_nlink > 1:
        problem = (f"Refused: {shown} has {status.st_nlink} names (hard links), so it may be a "
                   "file from elsewhere; the file tools read only files with one name.")
    if problem is not None:
        os.close(descriptor)
        raise Unreadable(problem)
    return descriptor, status


def _binary(descriptor: int, size: int) -> bool:
    """True for a file a text header cannot disguise: one with holes (a sparse tail) or a
    NUL byte in its head, middle or tail."""
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_hole is not None and size:
        try:
            if os.lseek(descriptor, 0, seek_hole) < size:
                return True
        except OSError:
            pass  # a filesystem that cannot say
    places = {0, max(0, size // 2 - _SAMPLE // 2), max(0, size - _SAMPLE)}
    return any(b"\x00" in os.pread(descriptor, _SAMPLE, place) for place in places)


def _count_lines(descriptor: int, size: int) -> int:
    newlines, position, last = 0, 0, b"\n"
    while chunk := os.pread(descriptor, CHUNK * 16, position):
        newlines += chunk.count(b"\n")
        position += len(chunk)
        last = chunk[-1:]
    return newlines + (1 if size and last != b"\n" else 0)


def _skip_lines(descriptor: int, count: int) -> tuple[int, int]:
    """(the byte position after `count` lines, how many lines were there to skip)."""
    position, skipped = 0, 0
    while skipped < count:
        chunk = os.pread(descriptor, CHUNK * 16, position)
        if not chunk:
            break
        found = chunk.count(b"\n")
        if skipped + found < count:
            skipped, position = skipped + found, position + len(chunk)
            continue
        index = -1
        for _ in range(count - skipped):
            index = chunk.index(b"\n", index + 1)
        return position + index + 1, count
    return position, skipped


def _skip_within_line(descriptor: int, position: int, start: int) -> int:
    """The position `start` bytes further into the line at `position` (not past its end,
    moved on to a character boundary), read in chunks."""
    moved = 0
    while moved < start:
        chunk = os.pread(descriptor, min(CHUNK * 16, start - moved), position + moved)
        if not chunk:
            break
        newline = chunk.find(b"\n")
        if newline >= 0:
            return position + moved + newline
        moved += len(chunk)
    ahead = os.pread(descriptor, 4, position + moved)
    inside = 0
    while inside < len(ahead) and ahead[inside] & 0xC0 == 0x80:  # inside a UTF-8 character
        inside += 1
    return position + moved + inside


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="backslashreplace")


def _page_cut(raw: bytes, bounds: PageBounds) -> int:
    """How many bytes of `raw` the page shows: all of it when its text fits, else the
    longest prefix that fits, ending at a line break when one is inside it."""
    if fitting_prefix(_decode(raw), bounds) == len(_decode(raw)):
        return len(raw)
    low, high = 0, len(raw)
    while low < high:  # the longest byte prefix whose text fits
        middle = (low + high + 1) // 2
        text = _decode(raw[:middle])
        if fitting_prefix(text, bounds) == len(text):
            low = middle
        else:
            high = middle - 1
    newline = raw.rfind(b"\n", 0, low)
    if newline >= 0:
        return newline + 1
    while 0 < low < len(raw) and raw[low] & 0xC0 == 0x80:
        low -= 1
    return low


def read_text_page(path: str, offset: int = 0, limit: int = 200, *,
                   roots: Sequence[Path] | None = None, start: int = 0,
                   bounds: PageBounds = PAGE, extra_implicit: Sequence[Path] = (),
                   data_folders: Sequence[Path] = ()) -> str:
    """A page of a text file — at most `limit` lines (500), and never more than one page
    of characters and bytes — with a header saying where it is and how to read on, or a
    one-line refusal or error. Bytes that are not UTF-8 are shown as \\xNN escapes.
    `start` begins the page that many bytes into line `offset` (a line longer than a page
    is read in pieces). `roots` (explicit: they opt protected places back in, and replace
    the working directory), `extra_implicit` (folders readable as the working directory
    is) and `data_folders` (the session's data folder, refused) go to `check_readable`,
    which says what each does."""
    resolved, refusal = check_readable(path, roots, extra_implicit=extra_implicit,
                                       data_folders=data_folders)
    if resolved is None:
        return refusal
    try:
        descriptor, status = open_confined(resolved, path)
    except Unreadable as why:
        return str(why)
    try:
        return _page(descriptor, status.st_size, path, max(0, offset),
                     max(1, min(limit, MAX_PAGE_LINES)), max(0, start), bounds)
    except OSError as error:
        return f"Cannot read {path}: {error.strerror or error}"
    finally:
        os.close(descriptor)


def _page(descriptor: int, size: int, path: str, offset: int, limit: int, start: int,
          bounds: PageBounds) -> str:
    if _binary(descriptor, size):
        return (f"{path} is a binary file ({size:,} bytes), not text; load it with the "
                "library for its format instead.")
    position, skipped = _skip_lines(descriptor, offset)
    line_start = position
    if start and skipped == offset:
        position = _skip_within_line(descriptor, position, start)
    start = position - line_start  # where the page really begins in its line
    raw = os.pread(descriptor, bounds.bytes + 4, position)
    newline = -1
    for _ in range(limit):  # no more than `limit` lines
        newline = raw.find(b"\n", newline + 1)
        if newline < 0:
            break
    if newline >= 0:
        raw = raw[: newline + 1]
    if b"\x00" in raw:
        return (f"{path} is a binary file ({size:,} bytes), not text; load it with the "
                "library for its format instead.")
    shown = raw[: _page_cut(raw, PageBounds(bounds.chars, bounds.bytes, limit))]
    whole_lines = shown.count(b"\n")
    end = offset + whole_lines
    cut_inside_line = bool(shown) and not shown.endswith(b"\n") and position + len(shown) < size
    at_end = position + len(shown) >= size
    total = str(_count_lines(descriptor, size)) if size <= COUNT_LIMIT else \
        f"a file of {size:,} bytes"
    where = f"lines {offset}–{end}" if not start else \
        f"line {offset} from byte {start:,} to line {end}"
    if cut_inside_line:
        into = (start if whole_lines == 0 else 0) + len(shown) - (shown.rfind(b"\n") + 1)
        more = (f"; line {end} goes on: read_file(path={path!r}, offset={end}, "
                f"start={into})")
    elif at_end:
        more = "; end of file"
        end += 1 if shown and not shown.endswith(b"\n") else 0
        where = f"lines {offset}–{end}" if not start else \
            f"line {offset} from byte {start:,} to line {end}"
    else:
        more = f"; next offset {end}"
    lines = _decode(shown).split("\n")
    if shown.endswith(b"\n"):
        lines.pop()
    return f"[{where} of {total}{more}]\n" + "\n".join(line.rstrip("\r") for line in lines)
