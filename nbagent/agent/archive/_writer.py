"""`Archive`: one session's JSON Lines file, open for appending, that stays readable.

Before its first append it cuts a torn last line (a process killed mid-write); a write
that fails (a full disk) is cut back to where it started and reported once, and the next
write that succeeds starts with a full snapshot, so nothing between is lost. Before each
write it checks the file is still the one it writes (inode, link count, size): a file
deleted, replaced or truncated under it is set aside and the session goes on in a new
file at the same path that starts with a full snapshot, with one warning.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...engine._exceptions import ArchiveError, NbagentWarning
from ._kinds import (
    BY_KIND,
    header_kind,
    is_header,
    newest_message,
    record_of,
    ref_of,
)
from ._paths import data_dir, next_sequence, session_path
from ._private_files import (
    ARCHIVE_SET_ASIDE,
    SESSION_ARCHIVE,
    open_files,
    open_for_append,
    open_lock,
    private_folder,
    release,
    set_aside,
    try_lock,
)
from ._records import encode, last_newline_end, read_at
from ._redact import Redactor
from ._shortcuts import Shortcuts

logger = logging.getLogger("nbagent")
Snapshot = Callable[[bool], list[object]]  # a fresh file? -> the events it starts with
Line = tuple[str | None, bytes]  # (output ref, the encoded record)
BACKLOG = 16 * 2**20  # bytes of failed records held for the next write


class Archive(Shortcuts):
    """The append-only JSON Lines transcript of one session, open for writing.

    Opening it takes the session: a second `Archive` on the same file (in this process
    or another) raises `ArchiveError` until this one is closed (`close()`, the end of a
    `with` block, garbage collection or the end of the process). If the file cannot be
    opened, one warning is given and the writes are skipped: the chat goes on.
    A session writes through `record` (each event through its row of the kinds table)
    and hands its `snapshot` with each write: the events a new file starts with.
    """

    def __init__(self, session_id: str, directory: Path | None = None) -> None:
        root = directory or data_dir()
        path = session_path(session_id, root)
        self._open(session_id, path, folders=(root, root / "sessions"))
        self._sequenced: Path | None = root

    @classmethod
    def at(cls, path: str | Path) -> Archive:
        """The archive file at `path`, wherever it is (appends go to that same file)."""
        archive = cls.__new__(cls)
        path = Path(path).expanduser()
        archive._open(path.stem, path, folders=())
        archive._sequenced = path.parent.parent if path.parent.name == "sessions" else None
        return archive

    def _open(self, session_id: str, path: Path, folders: Sequence[Path]) -> None:
        self.session_id = session_id
        self.path = path
        self.failed: str | None = None  # why the last write failed (None: the file is whole)
        self._unopened = False  # the file could not be opened: nothing is written
        self._descriptor: int | None = None
        self._close: weakref.finalize | None = None  # type: ignore[type-arg]
        self._write_lock = threading.Lock()
        self._offsets: dict[str, int] = {}  # output ref -> where its record starts
        self._indexed = False
        self._size = 0  # where our next record starts (what we wrote so far)
        self._tail_checked = False
        self._resync = False  # a write failed: the next one starts with a snapshot
        self._backlog: list[Line] = []  # records a failed write left for the next one
        self._backlog_bytes = 0
        self._reported = False
        self._session: dict[str, Any] = {}
        try:
            for number, folder in enumerate(folders):
                private_folder(folder, follow=number == 0)
            descriptor = open_for_append(path, kind=SESSION_ARCHIVE)
        except OSError as error:
            self.failed, self._unopened = f"{type(error).__name__}: {error}", True
            self._warn(f"nbagent cannot write its session archive ({self.failed}); the chat "
                       "goes on, but this session will not be recoverable")
            return
        self._take(descriptor)

    def _take(self, descriptor: int) -> None:
        status = os.fstat(descriptor)
        key = (status.st_dev, status.st_ino)
        with open_lock:
            taken = key in open_files or not try_lock(descriptor)
            if not taken:
                open_files.add(key)
        if taken:
            os.close(descriptor)
            raise ArchiveError(f"session {self.session_id} is open in another agent or process "
                               f"({self.path}); close it there first, or start a new session")
        self._descriptor, self._key, self._size = descriptor, key, status.st_size
        self._close = weakref.finalize(self, release, descriptor, key)

    def close(self) -> None:
        """Release the session (another agent may then resume it). Idempotent."""
        if self._close is not None:
            self._close()
        self._descriptor = None

    @property
    def closed(self) -> bool:
        return self._descriptor is None

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _warn(self, text: str) -> None:
        warnings.warn(text, NbagentWarning, stacklevel=5)

    # -- writing ---------------------------------------------------------------------------

    def record(self, event: object, *, snapshot: Snapshot | None = None) -> bool:
        """Append the record `event` becomes (its row of the kinds table says how; no row:
        nothing is written). `snapshot` gives the session's events a new file starts with
        (the session passes it: the archive holds no hook). True when it is in the file."""
        made = record_of(event)
        if made is None:
            return False
        kind, payload = made
        if is_header(kind) and "sequence" not in payload:  # its place among the sessions
            sequence = next_sequence(self._sequenced) if self._sequenced is not None else 0
            payload = {**payload, "sequence": sequence}
        return self.write(kind, payload, sync=BY_KIND[kind].sync, snapshot=snapshot)

    def write(self, kind: str, payload: Mapping[str, Any], *, sync: bool = False,
              snapshot: Snapshot | None = None) -> bool:
        """Append one record, secrets redacted; `sync` forces it to disk before returning
        (write-ahead). Never raises; True when the record is in the file."""
        if self._unopened:
            return False
        redactor = Redactor()
        try:
            line = encode({"kind": kind, **redactor.value(dict(payload))})
        except (TypeError, ValueError, RecursionError) as error:
            self._report(error)
            return False
        with self._write_lock:
            if self._descriptor is None:
                self._report(ArchiveError(f"{self.path} was closed"))
                return False
            return self._append(kind, payload, line, sync, redactor, snapshot)

    def _append(self, kind: str, payload: Mapping[str, Any], line: bytes, sync: bool,
                redactor: Redactor, snapshot: Snapshot | None) -> bool:
        descriptor = self._descriptor
        assert descriptor is not None
        start = self._size
        records: list[Line] = [(ref_of(kind, payload), line)]
        try:
            moved = self._moved()
            if moved is not None:
                descriptor, start = self._new_file(moved), 0
            elif not self._tail_checked:
                start = self._cut_torn_tail(descriptor)
            if moved is not None or self._resync:
                records = self._snapshot_lines(redactor, kind, payload, snapshot,
                                               fresh=moved is not None)
            else:
                records = self._backlog + records
            offsets, data = [], b""
            for _, each in records:
                offsets.append(start + len(data))
                data += each
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view):]
            if sync:
                os.fsync(descriptor)
        except OSError as error:
            self._cut_back(descriptor, start)
            self._keep_back(records)
            self._report(error)
            return False
        self._size, self._resync, self.failed = start + len(data), False, None
        self._backlog, self._backlog_bytes = [], 0
        for offset, (ref, _) in zip(offsets, records, strict=True):
            if ref is not None:
                self._offsets[ref] = offset
        if is_header(kind):
            self._session = dict(payload)
        return True

    def _keep_back(self, records: list[Line]) -> None:
        """Hold what did not reach the file for the next write; past `BACKLOG` bytes, let
        the next write start with a snapshot instead."""
        if self._resync:
            return
        self._backlog = records
        self._backlog_bytes = sum(len(each) for _, each in records)
        if self._backlog_bytes > BACKLOG:
            self._backlog, self._backlog_bytes, self._resync = [], 0, True

    def _report(self, error: BaseException) -> None:
        self.failed = f"{type(error).__name__}: {error}"
        if not self._reported:
            self._reported = True
            self._warn(f"nbagent cannot write its session archive ({self.failed}); the chat "
                       "goes on, and the next write that succeeds catches the archive up")

    def _cut_back(self, descriptor: int, start: int) -> None:
        """Undo a partial write: the file ends where the failed record began."""
        try:
            os.ftruncate(descriptor, start)
        except OSError:
            self._tail_checked = False  # cut the torn line before the next append

    def _cut_torn_tail(self, descriptor: int) -> int:
        """Cut an unfinished last line (no newline): its record never finished."""
        self._tail_checked = True
        size = os.lstat(self.path).st_size
        end = last_newline_end(self.path, size)
        if end < size:
            logger.info("cut a torn last line (%d bytes) of %s", size - end, self.path)
            os.ftruncate(descriptor, end)
        self._size = end
        return end

    def _moved(self) -> str | None:
        """What happened to the file we opened, if it is no longer at our path, whole."""
        try:
            there = os.lstat(self.path)
        except FileNotFoundError:
            return "deleted"
        if (there.st_dev, there.st_ino) != self._key:
            return "replaced"
        if there.st_size < self._size:
            return "truncated"
        return None

    def _new_file(self, what: str) -> int:
        """Set aside what is at our path (never deleted) and open a new file there."""
        aside = None
        if os.path.lexists(self.path):
            aside = set_aside(self.path, self.path.with_name(
                f"{self.path.name}.{what}-{time.strftime('%Y%m%d-%H%M%S')}"),
                kind=ARCHIVE_SET_ASIDE)
        old = self._close
        self._descriptor, self._close = None, None
        if old is not None:
            old()
        self._offsets, self._indexed = {}, True
        self._take(open_for_append(self.path, kind=SESSION_ARCHIVE))
        self._tail_checked = True
        kept = f"; what was there is kept as {aside.name}" if aside is not None else ""
        self._warn(f"nbagent's session archive {self.path} was {what} while the session ran; "
                   f"the session goes on in a new file there that starts with a full snapshot"
                   f"{kept}")
        assert self._descriptor is not None
        return self._descriptor

    def _snapshot_lines(self, redactor: Redactor, kind: str, payload: Mapping[str, Any],
                        snapshot: Snapshot | None, *, fresh: bool) -> list[Line]:
        """The session's snapshot (a `fresh` file's whole start, else the history as one
        rewrite) and then the record being written, unless the snapshot already ends
        with it (a message is announced after it joined the history)."""
        records = [made for made in map(record_of, snapshot(fresh) if snapshot else [])
                   if made is not None]
        header = header_kind()
        if not records and self._session and header is not None and not is_header(kind):
            records = [(header, self._session)]
        if "sequence" in self._session:  # a new file keeps the session's place
            records = [(k, {**p, "sequence": self._session["sequence"]}) if is_header(k)
                       else (k, p) for k, p in records]
        held = [newest for holds, newest in (newest_message(k, p) for k, p in records) if holds]
        holds, newest = newest_message(kind, payload)
        # only a record of one message can be the snapshot's end (a rewrite never is: it
        # is written before the history it holds replaces the snapshot's)
        one = holds and not BY_KIND[kind].whole_history
        if not (one and held[-1:] == [newest]):
            records.append((kind, dict(payload)))
        return [(ref_of(k, p), encode({"kind": k, **redactor.value(dict(p))}))
                for k, p in records]

    # -- reading back ----------------------------------------------------------------------

    def know_outputs(self, offsets: Mapping[str, int]) -> None:
        """Where earlier outputs' records start (a replay found them)."""
        self._offsets = {**offsets, **self._offsets}
        self._indexed = True

    def output(self, ref: str) -> str | None:
        """A stored full output (as archived: secrets redacted), or None."""
        if ref not in self._offsets and not self._indexed:
            from ._replay import output_offsets

            self._indexed = True
            self._offsets = {**output_offsets(self.path), **self._offsets}
        start = self._offsets.get(ref)
        record = read_at(self.path, start) if start is not None else None
        if record is not None and record.get("ref") == ref:
            text = record.get("text")
            return text if isinstance(text, str) else None
        return None
