"""The files nbagent writes, and the one way it writes them. `WRITTEN` is the one table of
them (where each is, how it is written, what it holds, and why its content is not redacted
here when it is not); every file nbagent makes, appends to, replaces or sets aside goes
through a function below that names its row (`kind=`): 0700 folders of ours, 0600 regular
files of ours opened without following a link, one writer per file (an in-process set plus
`flock` across processes), text redacted by the one redaction (`_redact`) unless the row
says why not. tests/test_file_writers.py allows no other writer in the package and checks
that each row is named by its callers; docs/security.md's list is printed from the table.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ...engine._exceptions import ArchiveError
from ._redact import redact

if sys.platform != "win32":
    import fcntl

FILE_MODE, FOLDER_MODE = 0o600, 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a planted FIFO fails instead of blocking
open_files: set[tuple[int, int]] = set()  # (device, inode) of every archive open here
open_lock = threading.Lock()


@dataclass(frozen=True)
class WrittenFile:
    """One kind of file nbagent writes: a row of `WRITTEN`. `unredacted` says why what it
    holds is not redacted by the function that writes it (None: it is, always); a function
    that hands out a handle or a descriptor to write through takes only a row that says
    why. `remedy` ends the message refusing a file planted in its place."""

    name: str
    path: str  # where, as the docs show it (under the data folder unless it says)
    how: str
    holds: str
    unredacted: str | None = None
    remedy: str = "remove it"


_ARCHIVED = "by the archive's writer, each record as it encodes it (inside JSON values: keys "
SESSION_ARCHIVE = WrittenFile(
    "session archive", "`sessions/<session id>.jsonl`",
    "appended, a record a line; synced where a record must not be lost",
    "every message, full tool output, compaction and run of the model's code of one session",
    _ARCHIVED + "and structure kept, every other byte exact)",
    "remove it, or use another session id")
ARCHIVE_SET_ASIDE = WrittenFile(
    "archive set aside", "`sessions/<session id>.jsonl.<replaced or truncated>-<time>`",
    "renamed, never written", "what was found at a running session's archive path in "
    "place of its archive (the session goes on in a new file there)",
    "none: never written, the file found there renamed")
RECALL_INDEX = WrittenFile(
    "recall's index", "an unlinked temporary file in `sessions/` (else the system's temporary "
    "folder)", "appended; gone when the kernel ends",
    "each archived message's text as `recall` searches it",
    "already done: the archive's own text, read back")
NOTEBOOK_POINTER = WrittenFile(
    "notebook pointer", "`notebooks/<name>-<hash>.json`", "replaced whole",
    "the notebook's path, the file it was then (its resolved path, device and inode), the "
    "session it last chatted in and the ones before")
SERVER_LOCK = WrittenFile(
    "server start lock", "`servers/<key>.lock`",
    "held (flock) while a kernel checks, joins or starts the embedded model's server",
    "nothing", "none: empty, only locked")
SERVER_RECORD = WrittenFile(
    "server record", "`servers/<key>.json`", "replaced whole",
    "the shared embedded server's pid, port and model alias")
SERVER_CLIENTS = WrittenFile(
    "server clients file", "`servers/<key>.clients`",
    "held: each kernel using the server holds a shared flock on it, the server ends once it "
    "can take it alone", "nothing", "none: empty, only locked")
SERVER_LOG = WrittenFile(
    "server log", "an unlinked temporary file in the system's temporary folder",
    "written by the embedded server's process; gone with it",
    "llama.cpp's log, read back only to say why a start failed",
    "none: written by the llama.cpp process, not by nbagent")
WRITTEN = (SESSION_ARCHIVE, ARCHIVE_SET_ASIDE, RECALL_INDEX, NOTEBOOK_POINTER, SERVER_LOCK,
           SERVER_RECORD, SERVER_CLIENTS, SERVER_LOG)


def ours(status: os.stat_result) -> bool:
    return not hasattr(os, "getuid") or status.st_uid == os.getuid()


def private_folder(folder: Path, *, follow: bool) -> None:
    """Make `folder` exist as a 0700 folder of ours: create it, tighten it if it is too
    open; refuse one that belongs to someone else (or, unless `follow`, is a link)."""
    try:
        folder.mkdir(mode=FOLDER_MODE, parents=True)
    except FileExistsError:
        pass
    status = os.stat(folder) if follow else os.lstat(folder)
    if stat.S_ISLNK(status.st_mode):
        raise ArchiveError(f"{folder} is a symbolic link; nbagent keeps sessions only in a "
                           "real folder (remove the link)")
    if not stat.S_ISDIR(status.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder))
    if not ours(status):
        raise ArchiveError(f"{folder} belongs to another user (uid {status.st_uid}); nbagent "
                           "keeps sessions only in a folder you own: set NBAGENT_DATA_DIR")
    if stat.S_IMODE(status.st_mode) != FOLDER_MODE:
        os.chmod(folder, FOLDER_MODE)


def _handed_out(kind: WrittenFile) -> None:
    """A handle to write through bypasses the redaction here: only a row that says why."""
    if kind.unredacted is None:
        raise ValueError(f"the {kind.name}'s row does not say why what it holds may go "
                         "unredacted: write it whole through replace_whole")


def _open_own(path: Path, flags: int, kind: WrittenFile) -> int:
    """A descriptor on `path`: never through a symbolic link, only a regular file of ours
    with one name, made 0600 whatever the umask."""
    try:
        descriptor = os.open(path, flags | _NOFOLLOW | _CLOEXEC | _NONBLOCK, FILE_MODE)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK) or path.is_symlink():
            raise ArchiveError(f"{path} is a symbolic link; nbagent never follows a link to "
                               f"its {kind.name} ({kind.remedy})") from None
        if error.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader, a folder
            raise ArchiveError(f"{path} is not a regular file; nbagent writes its "
                               f"{kind.name} only to its own files ({kind.remedy})") from None
        raise
    try:
        status = os.fstat(descriptor)
        problem = ("is not a regular file" if not stat.S_ISREG(status.st_mode)
                   else f"belongs to another user (uid {status.st_uid})" if not ours(status)
                   else "has other names (hard links)" if status.st_nlink > 1 else None)
        if problem:
            raise ArchiveError(f"{path} {problem}; nbagent writes its {kind.name} only to its "
                               f"own files ({kind.remedy})")
        if stat.S_IMODE(status.st_mode) != FILE_MODE:
            os.fchmod(descriptor, FILE_MODE)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def open_for_append(path: Path, *, kind: WrittenFile) -> int:
    """A descriptor to append to `path` (a file of ours, see `_open_own`); what is written
    through it is the caller's, so `kind` must say why it is not redacted here."""
    _handed_out(kind)
    return _open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, kind)


def open_for_lock(path: Path, *, kind: WrittenFile) -> int:
    """A descriptor on `path` (made empty if missing) to hold a `flock` on; never written."""
    _handed_out(kind)
    return _open_own(path, os.O_RDWR | os.O_CREAT, kind)


def replace_whole(path: Path, text: str, *, kind: WrittenFile) -> None:
    """Make `text` (redacted, unless `kind` says why not) the whole content of `path`,
    atomically: written to a new 0600 file beside it, synced, renamed over it (a link at
    `path` is replaced, never followed)."""
    data = (text if kind.unredacted else redact(text)).encode("utf-8", "surrogatepass")
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                             suffix=".tmp")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view):]
        os.fsync(descriptor)
        os.close(descriptor)
        descriptor = -1
        os.replace(temporary, path)
    except BaseException:
        if descriptor >= 0:
            os.close(descriptor)
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def temporary_file(*, kind: WrittenFile, beside: Path | None = None) -> BinaryIO:
    """A 0600 file with no name, gone when closed: in the folder `beside` (the same private
    folder and file system as what it serves) when it can be, else the system's."""
    _handed_out(kind)
    if beside is not None:
        try:
            return tempfile.TemporaryFile(dir=beside)
        except OSError:
            pass
    return tempfile.TemporaryFile()


def set_aside(path: Path, aside: Path, *, kind: WrittenFile) -> Path:
    """Rename what is at `path` to `aside` (or `aside-2`, … when that is taken: nothing set
    aside before is replaced); the name it got."""
    _handed_out(kind)
    free, number = aside, 1
    while os.path.lexists(free):
        number += 1
        free = aside.with_name(f"{aside.name}-{number}")
    os.replace(path, free)
    return free


def release(descriptor: int, key: tuple[int, int]) -> None:
    with open_lock:
        open_files.discard(key)
    os.close(descriptor)  # closing drops the flock too


def try_lock(descriptor: int) -> bool:
    if sys.platform == "win32":
        return True
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True  # a file system without flock: the in-process check still holds
    return True


def is_held(path: Path) -> bool:
    """Whether a writer (in this process or another) holds the file at `path` now."""
    try:
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return False
    try:
        status = os.fstat(descriptor)
        with open_lock:
            if (status.st_dev, status.st_ino) in open_files:
                return True
        if sys.platform == "win32":
            return False
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        return False
    finally:
        os.close(descriptor)  # (and with it the shared lock just taken)


def open_for_reading(path: Path) -> BinaryIO:
    return open(path, "rb")
