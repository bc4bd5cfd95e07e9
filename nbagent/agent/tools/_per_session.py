"""One object per session, made on first use and subscribed to that session's events:
a session's code runs, its cell draft, its delegated tasks' stopper. Keyed by the event
stream, held weakly: it goes with its session."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from ...engine._events import Event, EventStream

T = TypeVar("T", bound=Callable[[Event], None])


class PerSession(Generic[T]):
    """`per(events)`: the one `T` of `events`' session, made by `make` and subscribed to
    the stream the first time it is asked for."""

    def __init__(self, make: Callable[[EventStream], T]) -> None:
        self._make = make
        self._made: weakref.WeakKeyDictionary[EventStream, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, events: EventStream) -> T | None:
        """The session's `T` if it was made (never makes one)."""
        return self._made.get(events)

    def __call__(self, events: EventStream) -> T:
        with self._lock:
            made = self._made.get(events)
            if made is None:
                made = self._made[events] = self._make(events)
                events.subscribe(made)
            return made
