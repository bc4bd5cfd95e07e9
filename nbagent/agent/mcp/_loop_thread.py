"""An asyncio event loop of our own, in a daemon thread, where every MCP session lives.
Callers in any thread — ipykernel's (whose loop is already running), plain Python, a
worker — hand it a coroutine and wait for the result, so MCP behaves the same everywhere.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """One event loop running in one daemon thread, started on first use."""

    def __init__(self, name: str = "nbagent-mcp") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=serve, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    @property
    def in_loop(self) -> bool:
        """Whether the caller is running on this loop's own thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None, *,
            paused: Callable[[], float] | None = None) -> T:
        """Run `coroutine` on the loop and wait for its result (or raise its exception;
        `TimeoutError` after `timeout` seconds, when the coroutine is cancelled). With
        `paused` (a clock of seconds not to count, such as the user's answering time), the
        timeout is extended by what that clock gained meanwhile."""
        if self.in_loop:
            coroutine.close()
            raise RuntimeError("an MCP call cannot wait for itself on the MCP loop's thread")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._started())
        started, held = time.monotonic(), paused() if paused is not None else 0.0
        try:
            while True:
                left = None
                if timeout is not None:
                    gained = paused() - held if paused is not None else 0.0
                    left = started + timeout + gained - time.monotonic()
                    if left <= 0:
                        raise TimeoutError(f"no answer within {timeout:g} s")
                try:
                    return future.result(left)
                except concurrent.futures.TimeoutError:
                    if future.done():  # the coroutine's own TimeoutError
                        raise
        except BaseException:  # a timeout, or an interrupt while waiting: the call stops too
            future.cancel()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and its thread (after whatever the caller already awaited)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join(timeout)
        if not thread.is_alive():
            loop.close()
