"""One embedded server per user and configuration, shared by that user's kernels: started
by the first kernel that needs it, reused by the others, gone when the last one lets go.
Three files per server in the `servers/` folder of the data folder (0700; files 0600,
never through a link):

    <key>.lock     held (flock, exclusive) while a kernel checks or starts the server
    <key>.json     the running server: its pid, port and model alias
    <key>.clients  each kernel using the server holds a shared flock on it; the server
                   takes it exclusively once a second (`_server_child`): when it can, no
                   kernel is left, and it ends — also after every kernel was SIGKILLed,
                   as the kernel's locks go with its process

A server is checked before it is reused (its pid alive, its port answering: a route that
takes no model lock, so a generation for another kernel does not make it look dead).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...engine._exceptions import LocalModelError
from ..archive._paths import data_dir
from ..archive._private_files import (
    SERVER_CLIENTS,
    SERVER_LOCK,
    SERVER_RECORD,
    open_for_lock,
    private_folder,
    replace_whole,
)

if sys.platform != "win32":
    import fcntl

SERVERS = "servers"
LOCK_WAIT_S = 300.0  # another kernel starting the server: at most this long to wait
ENDING_S = 15.0  # a server ending itself (no kernel left): how long its exit may take
ANSWER_S = 5.0  # a reused server's port must answer within this
REUSE_WAIT_S = 60.0  # a shared server whose process lives but whose port is silent: wait


def can_share() -> bool:
    """Whether servers can be shared here (file locks across processes)."""
    return sys.platform != "win32"


def servers_folder() -> Path:
    """Where the shared servers' files are: `servers/` in the data folder."""
    return data_dir() / SERVERS


def server_key(**configuration: Any) -> str:
    """A file name for one server configuration (the GGUF, window, threads, options)."""
    text = json.dumps(configuration, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie waiting for its parent counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's: alive (ours never are)
    try:
        return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


def answers(port: int, timeout: float = ANSWER_S) -> bool:
    """Whether a server answers on `port` (its OpenAPI page: no model lock taken)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except OSError:
        return False


class SharedServer:
    """The files of one shared server, and this process's hold on it."""

    def __init__(self, folder: Path, key: str) -> None:
        self.folder, self.key = folder, key
        self._held: int | None = None  # our shared lock's descriptor on the clients file

    @property
    def clients(self) -> Path:
        return self.folder / f"{self.key}.clients"

    @property
    def state(self) -> Path:
        return self.folder / f"{self.key}.json"

    @property
    def holding(self) -> bool:
        return self._held is not None

    def _open_clients(self) -> int:
        private_folder(self.folder, follow=True)
        return open_for_lock(self.clients, kind=SERVER_CLIENTS)

    @contextlib.contextmanager
    def starting(self, timeout: float = LOCK_WAIT_S) -> Iterator[None]:
        """Hold the start lock: one kernel at a time checks, joins or starts the server."""
        private_folder(self.folder, follow=True)
        descriptor = open_for_lock(self.folder / f"{self.key}.lock", kind=SERVER_LOCK)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LocalModelError(
                            f"another kernel has been starting the embedded model's server "
                            f"for {timeout:.0f} s ({self.folder})") from None
                    time.sleep(0.1)
            yield
        finally:
            os.close(descriptor)

    def hold(self) -> bool:
        """Take this process's shared hold on the server (kept until `let_go`); False when
        the server is ending (it holds the clients file exclusively)."""
        if self._held is not None:
            return True
        descriptor = self._open_clients()
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return False
        self._held = descriptor
        return True

    def let_go(self) -> bool:
        """Drop this process's hold; True when no other process holds the server (then it
        is this one's to stop: the hold that proves it is kept until the process ends)."""
        held, self._held = self._held, None
        if held is None:
            return False
        os.close(held)
        descriptor = self._open_clients()
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return False
        os.close(descriptor)  # (the server may take it now: it is ending either way)
        return True

    def join(self) -> tuple[int, int] | None:
        """The (pid, port) of the server another process runs, checked — its process
        alive, its port answering — and held; or None, the hold taken for a new one (after
        a server that was ending has ended). Raises `LocalModelError` when a live server
        does not answer within `REUSE_WAIT_S`."""
        found = self.running()
        if found is None:
            self.hold_when_free()
            return None
        if not self.hold():  # it is ending (no process held it): wait, then start anew
            self.wait_ended(found["pid"])
            self.hold_when_free()
            return None
        deadline = time.monotonic() + REUSE_WAIT_S
        while not answers(found["port"]):
            if not pid_alive(found["pid"]):
                self.forget(found["pid"])
                return None  # it died meanwhile: start one (the hold is ours)
            if time.monotonic() > deadline:
                raise LocalModelError(
                    f"the embedded model's server (pid {found['pid']}, port {found['port']}, "
                    f"shared by this user's kernels) does not answer within "
                    f"{REUSE_WAIT_S:.0f} s")
            time.sleep(ANSWER_S / 10)
        return int(found["pid"]), int(found["port"])

    def running(self) -> dict[str, Any] | None:
        """The server recorded as running, if its process lives (its port not yet asked)."""
        record = self._record()
        if record is None or not all(isinstance(record.get(k), int) for k in ("pid", "port")):
            return None
        return record if pid_alive(record["pid"]) else None

    def _record(self) -> dict[str, Any] | None:
        try:
            with open(self.state, encoding="utf-8") as file:
                record = json.load(file)
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def wait_ended(self, pid: int, timeout: float = ENDING_S) -> None:
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)

    def hold_when_free(self, timeout: float = ENDING_S) -> None:
        """Take the hold, waiting for a server that is ending (holding the clients file
        exclusively) to be gone."""
        deadline = time.monotonic() + timeout
        while not self.hold():
            if time.monotonic() > deadline:
                raise LocalModelError(f"the embedded model's server in {self.folder} is "
                                      "ending and did not end")
            time.sleep(0.1)

    def record(self, pid: int, port: int, alias: str) -> None:
        """Say which server runs (replaced atomically)."""
        private_folder(self.folder, follow=True)
        replace_whole(self.state, json.dumps({"pid": pid, "port": port, "alias": alias}),
                      kind=SERVER_RECORD)

    def forget(self, pid: int) -> None:
        """Remove the record if it names `pid` (a server that ended)."""
        record = self._record()
        if record is not None and record.get("pid") == pid:
            with contextlib.suppress(OSError):
                os.unlink(self.state)


def terminate(pid: int, timeout: float = 10.0) -> None:
    """End a server process that is not our child (SIGTERM, then SIGKILL)."""
    import signal

    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, timeout)):
        try:
            os.kill(pid, sig)
        except OSError as error:
            if error.errno == errno.ESRCH:
                return
            raise
        deadline = time.monotonic() + wait
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not pid_alive(pid):
            return
