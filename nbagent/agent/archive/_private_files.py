"""Private files on disk: a 0700 folder of ours, a 0600 regular file of ours opened
for appending without following a link, and one writer per file (an in-process set
plus `flock` across processes). The archive keeps its sessions through these.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import threading
from pathlib import Path
from typing import BinaryIO

from ...engine._exceptions import ArchiveError

if sys.platform != "win32":
    import fcntl

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
open_files: set[tuple[int, int]] = set()  # (device, inode) of every archive open here
open_lock = threading.Lock()


def ours(status: os.stat_result) -> bool:
    return not hasattr(os, "getuid") or status.st_uid == os.getuid()


def private_folder(folder: Path, *, follow: bool) -> None:
    """Make `folder` exist as a 0700 folder of ours: create it, tighten it if it is too
    open; refuse one that belongs to someone else (or, unless `follow`, is a link)."""
    try:
        folder.mkdir(mode=0o700, parents=True)
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
    if stat.S_IMODE(status.st_mode) != 0o700:
        os.chmod(folder, 0o700)


def open_for_append(path: Path) -> int:
    """A descriptor to append to `path`: never through a symbolic link, only a regular
    file of ours with one name, made 0600 whatever the umask."""
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_NONBLOCK", 0))  # a planted FIFO fails instead of blocking
    try:
        descriptor = os.open(path, flags, 0o600)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK) or path.is_symlink():
            raise ArchiveError(f"{path} is a symbolic link; nbagent never follows a link to a "
                               "session file (remove it, or use another session id)") from None
        if error.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader, a folder
            raise ArchiveError(f"{path} is not a regular file; nbagent writes sessions only "
                               "to its own files (remove it, or use another session id)") from None
        raise
    try:
        status = os.fstat(descriptor)
        problem = ("is not a regular file" if not stat.S_ISREG(status.st_mode)
                   else f"belongs to another user (uid {status.st_uid})" if not ours(status)
                   else "has other names (hard links)" if status.st_nlink > 1 else None)
        if problem:
            raise ArchiveError(f"{path} {problem}; nbagent writes sessions only to its own "
                               "files (remove it, or use another session id)")
        if stat.S_IMODE(status.st_mode) != 0o600:
            os.fchmod(descriptor, 0o600)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


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
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
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
