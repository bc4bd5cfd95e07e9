"""Bounded JSON requests to the user's own model servers: the only network I/O of local
discovery and of the window probe. Each request has one total deadline (connecting,
headers and body together, so a server that drips a byte at a time cannot hold it),
follows no redirect, ignores proxy variables (a request for 127.0.0.1 never leaves the
machine through `HTTP_PROXY`) and reads at most `max_bytes`.

Requests run on one private event loop in a daemon thread, so callers are plain functions
that work alike from a script, a worker thread or a kernel whose own loop is running.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # both load when a probe first runs, not with nbagent (~0.1 s of CPU)
    import asyncio

    import httpx

T = TypeVar("T")
MAX_BYTES = 2_000_000  # one answer, at most, unless the caller says otherwise


class Unreachable(Exception):
    """Nothing answers there in time (refused, silent, dripping past the deadline):
    asking that server's other endpoints would only wait longer."""


class Deadline:
    """The moment by which a whole probe must be done; each request gets what is left,
    at most `per_request` seconds."""

    def __init__(self, seconds: float, per_request: float | None = None) -> None:
        self.ends = time.monotonic() + seconds
        self.per_request = per_request

    def remaining(self) -> float:
        return self.ends - time.monotonic()

    def left(self) -> float:
        """What the next request may take."""
        left = self.remaining()
        return left if self.per_request is None else min(left, self.per_request)


async def get_json(client: httpx.AsyncClient, url: str, deadline: Deadline,
                   body: Mapping[str, Any] | None = None, *, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON at `url` (POSTed `body` if given); None for a non-2xx answer (a redirect
    included: never followed), an answer over `max_bytes` or one that is not JSON — the
    server is there, this is not its endpoint. Raises `Unreachable` when nothing answers
    within the deadline."""
    import asyncio

    import httpx

    seconds = deadline.left()
    if seconds <= 0:
        raise Unreachable(url)
    method = "POST" if body is not None else "GET"
    try:
        # asyncio.timeout bounds the whole exchange; httpx's own timeouts bound each read
        async with asyncio.timeout(seconds):
            async with client.stream(method, url, json=body) as response:
                if not response.is_success:
                    return None
                data = bytearray()
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > max_bytes:
                        return None
    except (TimeoutError, httpx.TransportError) as error:
        raise Unreachable(url) from error
    except httpx.HTTPError:
        return None  # it answered, but not in a form we read (a bad encoding, ...)
    try:
        return json.loads(bytes(data))
    except (ValueError, RecursionError):  # not JSON, or nested past what Python parses
        return None


def client(https: bool = False) -> httpx.AsyncClient:
    """A client for one probe: no proxies from the environment, no redirects, no retries.
    Certificates are loaded only for an https server (loading them costs ~0.2 s, which
    plain-http loopback probes would pay for nothing)."""
    import httpx

    return httpx.AsyncClient(trust_env=False, follow_redirects=False, verify=https,
                             headers={"Content-Type": "application/json"})


_loop: tuple[asyncio.AbstractEventLoop, int] | None = None  # the loop, and its process
_loop_lock = threading.Lock()


def _probe_loop() -> asyncio.AbstractEventLoop:
    global _loop
    import asyncio

    with _loop_lock:
        # a forked child inherits the loop but not the thread that runs it: start another
        if _loop is None or _loop[0].is_closed() or _loop[1] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="nbagent-probe", daemon=True).start()
            _loop = (loop, os.getpid())
        return _loop[0]


def run_bounded(work: Callable[[], Coroutine[Any, Any, T]], seconds: float, fallback: T) -> T:
    """Run `work()` on the probe loop and return its answer, or `fallback` once `seconds`
    have passed or if it raised: a probe is a hint and never breaks its caller."""
    import asyncio

    async def bounded() -> T:
        async with asyncio.timeout(seconds):
            return await work()

    future = asyncio.run_coroutine_threadsafe(bounded(), _probe_loop())
    try:
        # the coroutine ends itself at `seconds`; the margin only covers its cleanup
        return future.result(timeout=seconds + 1.0)
    except Exception:  # a strange server or a timeout: no answer
        future.cancel()
        return fallback


async def gather_bounded(jobs: list[Awaitable[T]], seconds: float, fallback: T) -> list[T]:
    """Each job's answer, or `fallback` for one that raised or was still running after
    `seconds` (each job has its own bound, so one hung server never costs the others)."""
    import asyncio

    async def one(job: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(seconds):
                return await job
        except Exception:  # a probe is a hint
            return fallback

    return list(await asyncio.gather(*(one(job) for job in jobs)))
