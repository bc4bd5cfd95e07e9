"""When a stop may land in a run of the model's code: only while its code runs. The turn's
stop (`CodeRuns.stop`) raises KeyboardInterrupt in the run's thread, and an exception
raised into a thread lands at its next bytecode, wherever that is: between the run's
number and its header, inside the header's display, while its start is written to the
archive, while its outputs are shown or its outcome recorded — each a place where the
cell would keep saying "running…" or the record would name a run that never ran. So a
run's thread is `guarded`: a stop asked for while it is outside its code is only noted,
the code then does not start (`user_code` yields False) and the run says "not run"; a
stop while the code runs is raised in it, and one still pending as the code ends is
withdrawn, so it never lands in what follows. A thread not guarded (a runner called
directly) is never stopped here.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ._code_scope import interrupt


@dataclass
class _Guard:
    over: Callable[[], bool]  # whether the call the run belongs to has ended already
    stopped: bool = False  # a stop was asked for
    in_code: bool = False  # the run's code is running now
    raised: bool = False  # a stop was raised in the code (it may still be pending)


_lock = threading.Lock()
_guards: dict[int, _Guard] = {}  # thread id -> the guard of the run it runs


@contextmanager
def guarded(over: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """While the block runs, a stop of this thread (`stop`) lands only in the run's code
    (`user_code`); `over` says whether the call the run belongs to has already ended (the
    turn moved on before any stop could reach this thread)."""
    me = threading.get_ident()
    with _lock:
        _guards[me] = _Guard(over)
    try:
        yield
    finally:
        with _lock:
            _guards.pop(me, None)


def stop(thread: int) -> bool:
    """Ask the run `thread` runs to stop: raised in it if its code is running, else noted
    (its code never starts). False when the thread is not guarded (nothing noted)."""
    with _lock:
        guard = _guards.get(thread)
        if guard is None:
            return False
        guard.stopped = True
        if guard.in_code:
            guard.raised = True
            interrupt(thread)
    return True


def stopped() -> bool:
    """Whether this thread's run was asked to stop, or its call has ended."""
    with _lock:
        guard = _guards.get(threading.get_ident())
    return guard is not None and (guard.stopped or guard.over())


@contextmanager
def user_code() -> Iterator[bool]:
    """The block runs the code itself: yields False when the run was asked to stop first
    (the code must not start). A stop may land anywhere inside the block, also while it
    leaves: the caller catches KeyboardInterrupt around the block and calls `left()` in
    its handler (`execute` does)."""
    me = threading.get_ident()
    with _lock:
        guard = _guards.get(me)
    # the call's end is read outside the lock (it takes its own); a stop is checked and the
    # code marked running in one step, so a stop in between is never lost
    may = guard is None or not guard.over()
    with _lock:
        if guard is not None and may:
            may = not guard.stopped
            guard.in_code = may
    if not may:
        yield False
        return
    try:
        yield True
    finally:
        left()


def left() -> None:
    """This thread's code has ended: no stop is raised in it from now on, and one raised
    that has not landed yet is withdrawn (it would land in the showing or recording)."""
    me = threading.get_ident()
    with _lock:
        guard = _guards.get(me)
        if guard is not None and guard.in_code:
            guard.in_code = False
            if guard.raised:  # NULL clears the thread's pending asynchronous exception
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(me), None)
