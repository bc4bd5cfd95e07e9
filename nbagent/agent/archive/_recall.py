"""`recall`: the built-in tool's search of a session's archived messages, answered from an
index built once per archive file and brought up to date from where it stopped (only the
records appended since are read): each message's offset in the archive, and its text as
recall searches it, kept in an unlinked temporary file beside the archive and searched
through a memory map, so neither the archive nor the index is parsed again per call.
"""

from __future__ import annotations

import base64
import binascii
import json
import mmap
import os
import re
import threading
import weakref
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from ...engine._exceptions import ArchiveError
from ._kinds import BY_KIND
from ._private_files import RECALL_INDEX, temporary_file
from ._records import read_at, read_lines
from ._writer import Archive

_SEPARATOR = "\x1e"  # stands for a newline inside one message's searchable text


class RecallIndex:
    """The searchable messages of one archive file, as far as `covered` bytes."""

    def __init__(self, path: Path, identity: tuple[int, int]) -> None:
        self.path, self.identity = path, identity
        self.covered = 0
        self.last = (0, b"")  # where the last indexed line starts, and that line
        self.offsets = array("q")  # message number -> where its record starts
        self.starts = array("q")  # message number -> where its text starts in `text`
        # beside the archive: the same private folder and file system
        self.text: BinaryIO = temporary_file(kind=RECALL_INDEX, beside=path.parent)
        # The cache keeps its last indexes open until the process ends: close the file then
        # (or when an index is dropped unclosed), never leaving it to the interpreter's teardown.
        self._release = weakref.finalize(self, self.text.close)
        self.size = 0
        self._map: mmap.mmap | bytearray | None = None  # the text, searchable
        self.lock = threading.Lock()  # held by one reader at a time, and to close it
        self.closed = False

    def update(self, size: int) -> None:
        """Index the complete records from `covered` on (up to the file's end); what was
        read before a damaged line stays indexed."""
        if size == self.covered:
            return
        chunks: list[bytes] = []
        pending, last = self.size, self.last[0]
        try:
            for offset, end, record in read_lines(self.path, self.covered):
                field = _searched(record)
                if field is not None:  # a kind whose row names the message recall searches
                    text = searchable(record[field]).replace("\n", _SEPARATOR) + "\n"
                    data = text.encode("utf-8", "surrogatepass")
                    self.offsets.append(offset)
                    self.starts.append(pending)
                    chunks.append(data)
                    pending += len(data)
                self.covered, last = end, offset
        finally:
            if self.covered:
                self.last = (last, _line_at(self.path, last))
            self._commit(chunks)

    def still_there(self) -> bool:
        """The file still holds the last line indexed, where it was (an inode number
        is reused when a file is deleted and another made)."""
        return self.covered == 0 or _line_at(self.path, self.last[0]) == self.last[1]

    def _commit(self, chunks: list[bytes]) -> None:
        if not chunks:
            return
        data = b"".join(chunks)
        if isinstance(self._map, bytearray):
            self._map += data
            self.size = len(self._map)
            return
        try:
            self.text.seek(0, os.SEEK_END)
            self.text.write(data)
            self.text.flush()
        except OSError:  # the disk is full: hold the index in memory instead
            self.text.seek(0)
            held = bytearray(self.text.read(self.size)) + data
            self.close_map()
            self._release()  # the file goes; the index stays open, in memory
            self._map, self.size = held, len(held)
            return
        self.size = self.text.tell()
        self.close_map()
        self._map = mmap.mmap(self.text.fileno(), self.size, access=mmap.ACCESS_READ)

    def close_map(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._map = None

    def close(self) -> None:
        self.closed = True
        self.close_map()
        self._release()

    def find(self, needle: str) -> list[int]:
        """The numbers of the messages whose searchable text holds `needle`."""
        if self._map is None:
            return []
        pattern = needle.replace("\n", _SEPARATOR).encode("utf-8", "surrogatepass")
        found: list[int] = []
        position = self._map.find(pattern, 0)
        while position >= 0:
            number = bisect_right(self.starts, position) - 1
            found.append(number)
            following = self.starts[number + 1] if number + 1 < len(self.starts) else self.size
            position = self._map.find(pattern, following)
        return found


_KEEP = 8  # indexes kept at once (the least recently used one is closed)
_indexes: dict[Path, RecallIndex] = {}
_indexes_lock = threading.Lock()


@contextmanager
def index_of(path: Path) -> Iterator[RecallIndex]:
    """The up-to-date index of the archive at `path` (built on the first call), held for
    the caller alone until the block ends."""
    while True:
        status = os.stat(path)
        identity = (status.st_dev, status.st_ino)
        dropped: list[RecallIndex] = []
        with _indexes_lock:
            index = _indexes.get(path)
            if (index is None or index.closed or index.identity != identity
                    or status.st_size < index.covered or not index.still_there()):
                if index is not None:
                    dropped.append(index)
                index = RecallIndex(path, identity)
            _indexes.pop(path, None)
            _indexes[path] = index  # the most recently used last
            while len(_indexes) > _KEEP:
                dropped.append(_indexes.pop(next(iter(_indexes))))
        # Close a dropped index under its own lock: another thread may be reading it (its
        # memory map would vanish under the search); it finds it closed and takes a new one.
        for old in dropped:
            with old.lock:
                old.close()
        with index.lock:
            if index.closed:  # dropped by another thread after the lookup above
                continue
            index.update(status.st_size)
            yield index
            return


def _line_at(path: Path, offset: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.readline()


def recall(source: Archive | str | Path | None, query: str = "", message: int = -1,
           offset: int = 0, limit: int = 5) -> str:
    """The `recall` tool's answer: search the archived messages (newest first when the
    query is empty), or give one archived message whole by its number."""
    path = source.path if isinstance(source, Archive) else None if source is None \
        else Path(source)
    if path is None or not path.exists():
        return "No session archive to recall from."
    try:
        with index_of(path.resolve()) as index:
            return _answer(index, query, message, offset, limit)
    except (ArchiveError, OSError) as error:
        return f"The session archive cannot be read: {error}"


def _answer(index: RecallIndex, query: str, message: int, offset: int, limit: int) -> str:
    total = len(index.offsets)
    if message >= 0:
        if message >= total:
            return f"No archived message {message}; there are {total}."
        found, _ = _message(index, message)
        if isinstance(found.get("content"), list):  # a figures message: its text, no base64
            found = {**found, "content": shown_content(found["content"])}
        return json.dumps(found, ensure_ascii=False)[:8_000]
    needle = query.lower()
    hits: Sequence[int] = index.find(needle) if needle else range(total - 1, -1, -1)
    page = hits[max(0, offset): max(0, offset) + max(1, min(limit, 10))]
    lines = [f"{len(hits)} archived messages match{'' if needle else ' (newest first)'}; "
             f"showing {len(page)} from {offset}:"]
    for number in page:
        found, origin = _message(index, number)
        text = shown_content(found.get("content")) or json.dumps(found.get("tool_calls"))
        lines.append(f"#{number} {found.get('role')}{origin}: {text[:300]}")
    return "\n".join(lines)


def _searched(record: Mapping[str, Any]) -> str | None:
    """The field of `record` holding the message recall searches (its row's `searched`)."""
    row = BY_KIND.get(record["kind"])
    return row.searched if row is not None else None


def _message(index: RecallIndex, number: int) -> tuple[Mapping[str, Any], str]:
    """Archived message `number`, and where it came from when not the session itself
    (" (delegated task 1)": its row's `origin`)."""
    record = read_at(index.path, index.offsets[number])
    field = _searched(record) if record is not None else None
    found = record.get(field) if record is not None and field is not None else None
    row = BY_KIND.get(record["kind"]) if record is not None else None
    origin = row.origin(record) if row is not None and row.origin and record else ""
    return (found if isinstance(found, dict) else {}), (f" ({origin})" if origin else "")


def searchable(message: Mapping[str, Any]) -> str:
    """A message's text as the user would search it, lower-cased: its content, the
    tool-call ids (the recall handles snip placeholders name) and each call's name and
    arguments (not its JSON, where quotes and backslashes are escaped)."""
    parts = [shown_content(message.get("content")), str(message.get("tool_call_id") or "")]
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        parts.append(str(call.get("id") or "") if isinstance(call, dict) else "")
        if isinstance(function, dict):
            arguments = str(function.get("arguments") or "")
            parts += [str(function.get("name") or ""), arguments]
            try:  # the values as written, not JSON-escaped
                parsed = json.loads(arguments)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, dict):
                parts += [str(value) for value in parsed.values()]
    return "\n".join(parts).lower()


_NAMED = re.compile(r"^image (\d+): (.+)$", re.MULTILINE)  # how a figures header names one


def shown_content(content: Any) -> str:
    """A message's content as recall searches and shows it: a list of parts (a round's
    figures) as its text parts, each image part as a short placeholder naming the figure
    and its size. Base64 is no text: a 4-character slice of it would match any query."""
    if not isinstance(content, list):
        return str(content or "")
    texts = [str(part.get("text", "")) for part in content
             if isinstance(part, dict) and part.get("type") == "text"]
    names = {int(n): name for n, name in _NAMED.findall("\n".join(texts))}
    shown, images = [], 0
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            shown.append(str(part.get("text", "")))
        else:
            images += 1
            named = f"image {images}: {names[images]}" if images in names else \
                f"image {images}"
            shown.append(f"[{named}, {_image_kind(part)}]")
    return "\n".join(shown)


def _image_kind(part: dict[str, Any]) -> str:
    """"640×480 PNG" for a PNG data: URL (its header read), else the URL when short."""
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if not isinstance(url, str):
        return str(part.get("type") or "image")
    if not url.startswith("data:"):
        return url[:200]
    _, _, data = url[:120].partition(";base64,")
    try:
        header = base64.b64decode(data[:32])
    except (binascii.Error, ValueError):
        header = b""
    if len(header) < 24 or header[12:16] != b"IHDR":
        return url[5:].split(";", 1)[0] or "image"
    width, height = (int.from_bytes(header[at: at + 4], "big") for at in (16, 20))
    return f"{width}×{height} PNG"
