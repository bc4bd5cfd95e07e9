"""`ConnectionPool`: each MCP server's live `Connection`, on the MCP loop — opened on first
need and again after it died, dropped in the background when it hangs or breaks, all
stopped at close — with what each server listed and why one failed to start (said once
while the reason stays the same). A call's failure comes back as text the model can read,
never as an exception; its time limit does not count the time the user spends answering
a question the server asked. The thread-side face (configuration, approval, waiting with
timeouts) is `McpServers` (`_servers`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, Protocol, TypeVar

from .._approval import Approval
from .._asking import USER_CLOCK
from .._inert_text import strip_hidden
from ._catalog import Catalog
from ._config import ServerSpec
from ._connection import Connection, failure_text
from ._content import read_result
from ._sdk_log import once_per_kind

T = TypeVar("T")


def not_started(server: str, error: Exception) -> tuple[str, bool]:
    """What the model reads when `server` could not start for a call (an error result);
    a start that timed out says so rather than leaving the parentheses empty."""
    return (f"the MCP server {server!r} could not start ({str(error) or failure_text(error)}); "
            "it will be tried again on the next call"), True


class PoolSettings(Protocol):
    """What the pool reads from its owner each time it acts (so a change applies at once)."""

    start_timeout: float
    approval: Approval | None

    async def elicit(self, server: str, tool: str | None, params: Any) -> Any:
        """Answer a server's request for input (`McpServers.elicit`)."""
        ...

    def call_limit(self, server: str) -> float:
        """Seconds one call to `server` may take: the one answer the pool's own timeout
        and the owner's backstop both read (`McpServers.call_limit`)."""
        ...


class ConnectionPool:
    """The servers' live sessions by name; every `async` method runs on the MCP loop."""

    def __init__(self, specs: Mapping[str, ServerSpec], catalog: Catalog,
                 status: Callable[[str], None], settings: PoolSettings) -> None:
        self.specs = specs  # the owner's own mapping: a server added there is known here
        self.catalog = catalog
        self.status = status
        self.settings = settings
        self.connections: dict[str, Connection] = {}
        self.listed: dict[str, list[Any]] = {}  # server → its mcp_types.Tool list
        self.problems: dict[str, str] = {}
        self.failed_at: dict[str, float] = {}  # when a server last failed to start
        self.locks: dict[str, asyncio.Lock] = {}
        self.stopping: set[asyncio.Task[None]] = set()

    def forget(self, name: str) -> Connection | None:
        """Forget what is known of a removed server; returns its session, still to stop."""
        self.listed.pop(name, None)
        self.catalog.forget(name)
        self.problems.pop(name, None)
        self.failed_at.pop(name, None)
        return self.connections.pop(name, None)

    async def list_all(self, names: list[str], stale: Collection[str] = ()) -> None:
        await asyncio.gather(*(self.connected(name) for name in names),
                             *(self.relist(name) for name in stale), return_exceptions=True)

    async def relist(self, name: str) -> None:
        """List a live server's tools again, after it said they changed."""
        connection = self.connections.get(name)
        if connection is None:
            return
        try:
            tools = await asyncio.wait_for(connection.relist(), self.settings.start_timeout)
        except Exception as error:  # the old listing stays; the next call will tell
            self.status(f"MCP server {name!r} said its tools changed, but listing them again "
                        f"failed: {failure_text(error)}")
            return
        self.listed[name] = tools
        self.catalog.take(name, tools, self.settings.approval)

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Call `tool` on `server` (started when needed); its failures come back as text."""
        try:
            connection = await self.connected(server)
        except ConnectionError as error:
            return not_started(server, error)
        # read once from the owner, never worked out here: its backstop waits this long too
        limit = self.settings.call_limit(server)
        try:
            result = await within(connection.call(tool, arguments), limit)
        except TimeoutError:
            self.drop(server, connection)
            self.status(f"MCP server {server!r}: {tool} did not finish within "
                        f"{limit:g} s; the server was stopped and starts again on "
                        "the next call")
            return (f"{tool} did not finish within {limit:g} s; the MCP server "
                    f"{server!r} was stopped and will be started again on the next call"), True
        except Exception as error:
            if connection.alive:  # the server answered with a protocol error
                return f"the MCP server {server!r} refused {tool}: {failure_text(error)}", True
            self.drop(server, connection)
            reason = failure_text(error)
            tail = await connection.last_words()  # it exited: read to its last line
            self.status(f"MCP server {server!r} stopped during {tool} ({reason}); it starts "
                        "again on the next call")
            return (f"the MCP server {server!r} stopped during {tool} ({reason}"
                    f"{'; its last output: ' + tail if tail else ''}); it will be started "
                    "again on the next call"), True
        read = read_result(result)
        note = read.note()
        if note is not None:
            self.status(f"MCP server {server!r}, tool {strip_hidden(tool)!r}: {note}")
        return read.text, read.is_error

    async def connected(self, name: str) -> Connection:
        """The server's live session, starting (or restarting) it when needed."""
        lock = self.locks.setdefault(name, asyncio.Lock())
        async with lock:
            connection = self.connections.get(name)
            if connection is not None and connection.alive:
                return connection
            restarting = connection is not None or name in self.listed
            if connection is not None:
                self.drop(name, connection)
            self.status(f"{'restarting' if restarting else 'starting'} MCP server {name!r}…")
            fresh = Connection(name, self.specs[name], report=once_per_kind(name, self.status),
                               elicit=self.settings.elicit)
            try:
                tools = await fresh.open(self.settings.start_timeout)
            except ConnectionError as error:
                if self.problems.get(name) != str(error):  # once, while the reason holds
                    self.status(f"MCP server {name!r} could not start: {error}")
                self.problems[name] = str(error)
                self.failed_at[name] = time.monotonic()
                raise
            self.problems.pop(name, None)
            self.connections[name] = fresh
            self.listed[name] = tools
            self.catalog.take(name, tools, self.settings.approval)
            return fresh

    def drop(self, name: str, connection: Connection) -> None:
        """Stop a broken session in the background; the next call starts a new one."""
        if self.connections.get(name) is connection:
            del self.connections[name]
        stopping = connection.stop_soon()
        self.stopping.add(stopping)
        stopping.add_done_callback(self.stopping.discard)

    async def stop_all(self) -> None:
        connections = list(self.connections.values())
        self.connections.clear()
        await asyncio.gather(*(c.stop() for c in connections), *list(self.stopping),
                             return_exceptions=True)
        self.stopping.clear()


async def within(work: Awaitable[T], limit: float) -> T:
    """`await work`, or `TimeoutError` (the work cancelled) once it has taken `limit`
    seconds of its own: time the user spends answering a question meanwhile (a server's
    request for input, asked on `USER_CLOCK`) is added to the limit."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    started, asked = loop.time(), USER_CLOCK.seconds()
    while True:
        left = started + limit + (USER_CLOCK.seconds() - asked) - loop.time()
        if left <= 0:
            task.cancel()
            try:
                await task
            except BaseException:  # noqa: B036 -- the cancelled work's end is not ours
                pass
            raise TimeoutError(f"no answer within {limit:g} s")
        try:
            done, _ = await asyncio.wait({task}, timeout=left)
        except asyncio.CancelledError:  # the caller gave up: the work stops too
            task.cancel()
            raise
        if done:
            return task.result()
