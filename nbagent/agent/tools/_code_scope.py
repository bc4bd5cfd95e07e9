"""Where one run's output goes: `contained(sink)` sends what the running thread writes to
`sys.stdout` and `sys.stderr` into `sink` — that thread only: the user's own cells and every
other thread print where they always did — and `detach(thread)` cuts a run that would not
stop loose from everything the user sees: what it writes from then on is counted, never
shown, and its `on_detach` callbacks say so. Nothing process-wide outlives the runs: the
router goes onto the two streams while a run is contained and comes off when the last ends
(`contextlib.redirect_stdout` would swap the stream for every thread, and keep the swap for
as long as a run that ignores the interrupt goes on). `scope_here()` says whether the
calling thread is running one, and whether it was cut loose. `interrupt(thread)` is how a
run (or a delegated task) is asked to stop.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

STREAMS = ("stdout", "stderr")


def interrupt(thread: int) -> None:
    """Raise KeyboardInterrupt in `thread` — the way the kernel's interrupt reaches the
    thread that chats, for a thread it never reaches (a run's, a delegated task's). It
    lands at the thread's next bytecode: one blocked inside a C call gets it when the call
    returns, and code that catches it goes on (the caller decides what then)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread),
                                               ctypes.py_object(KeyboardInterrupt))


class RunScope:
    """One run's place: the `sink` its thread prints into, whether it was `detached` and
    what it wrote after that (`after`, counted only)."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.detached = False
        self.after = 0
        self.thread = threading.get_ident()
        self._callbacks: list[Callable[[], None]] = []

    def write(self, text: str) -> int:
        if self.detached:  # nobody sees it any more: counted, dropped
            self.after += len(text)
            return len(text)
        return int(self.sink.write(text) or 0)

    def flush(self) -> None:
        if not self.detached:
            self.sink.flush()

    def on_detach(self, callback: Callable[[], None]) -> None:
        """Call `callback` (in the thread that detaches the run) when it is detached."""
        self._callbacks.append(callback)

    def _detach(self) -> None:
        self.detached = True
        for callback in self._callbacks:
            try:
                callback()
            except Exception:  # saying so must never stop the detaching
                pass


_lock = threading.Lock()
_scopes: dict[int, RunScope] = {}  # thread id -> the run that thread is running


class _Router:
    """What `sys.stdout` (or `sys.stderr`) is while runs are contained: a write goes to the
    run its thread is running, else to the stream that was there before. A logging handler
    made during a run keeps this object, and keeps working after it is taken off."""

    def __init__(self, name: str, original: TextIO) -> None:
        self.name, self.original = name, original

    def _target(self) -> Any:
        scope = _scopes.get(threading.get_ident())
        return scope if scope is not None else self.original

    def write(self, text: str) -> int:
        return int(self._target().write(text) or 0)

    def writelines(self, lines: Any) -> None:
        for text in lines:
            self.write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        scope = _scopes.get(threading.get_ident())
        return False if scope is not None else bool(self.original.isatty())

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, buffer…: the stream's own
        return getattr(self.original, name)


def scope_here() -> RunScope | None:
    """The run the calling thread is running, if it is running one."""
    return _scopes.get(threading.get_ident())


@contextmanager
def contained(sink: Any) -> Iterator[RunScope]:
    """While the block runs, what this thread prints goes to `sink` (through the scope,
    which drops it once the run is detached); other threads are not touched."""
    scope = RunScope(sink)
    with _lock:
        for name in STREAMS:
            current = getattr(sys, name)
            if not isinstance(current, _Router):
                setattr(sys, name, _Router(name, current))
        _scopes[scope.thread] = scope
    try:
        yield scope
    finally:
        with _lock:
            if _scopes.get(scope.thread) is scope:
                del _scopes[scope.thread]
            if not _scopes:  # the last run ended: the streams are what they were
                for name in STREAMS:
                    current = getattr(sys, name)
                    if isinstance(current, _Router):
                        setattr(sys, name, current.original)


def detach(thread: int) -> RunScope | None:
    """Cut the run `thread` is running loose: nothing it prints or displays from now on is
    shown, and its scope's `on_detach` callbacks run here. None when it runs none."""
    with _lock:
        scope = _scopes.get(thread)
    if scope is None or scope.detached:
        return None
    scope._detach()
    return scope
