"""`McpServers`: the MCP servers a session uses, and their tools as nbagent `Tool`s.

Every session runs on one event loop of its own (a daemon thread), so a call works the
same from ipykernel, plain Python or a worker thread. A server that cannot start, dies
or stops answering never ends a chat: the call returns an error the model can read,
`on_status` gets one line for the user, and the next call starts the server again.
What a listing brings is offered as `_catalog` reads it (cleaned, bounded, unsupported
tools left out, each with one line). A changed listing (a `tools/list_changed`, or a
restart with other definitions) is caught before the next call to any server, said, takes
back the approvals it touches, and until `end_turn()` makes every call ask. With an
`Approval`, every call asks first unless the user allowed the tool or its server — the
server as it was when allowed (its command or URL, `_config.identity`), not its name. A
server's request for input is asked the same way (`_elicit`). Lines for the user reach
`on_status` in the caller's thread, before a question and before a call returns.
`close()` (and interpreter exit) stops every process the object started. The sessions
themselves, on the loop, are `_pool`'s.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from .._approval import Approval
from .._asking import USER_CLOCK
from . import _elicit
from ._catalog import Catalog, allow_configured
from ._config import (
    HttpServer,
    ServerSpec,
    identity,
    read_mcp_config,
    server_spec,
    server_specs,
)
from ._loop_thread import LoopThread
from ._oauth import SIGN_IN, SIGN_IN_TIMEOUT_S
from ._pool import ConnectionPool, not_started
from ._sdk_log import HeldLines
from ._tools import McpTool, make_tool, tool_names

CALL_TIMEOUT_S = 60.0
START_TIMEOUT_S = 30.0
RETRY_LISTING_S = 60.0  # a server that failed to start is listed again after this long
_MARGIN_S = 5.0  # the waiting thread's backstop beyond the loop's own timeouts
_LIVE: weakref.WeakSet[McpServers] = weakref.WeakSet()


class McpServers:
    """MCP servers by name, their tools for an `Agent`, and their processes' lifetime.

        servers = McpServers({"files": {"command": "npx", "args": [
            "-y", "@modelcontextprotocol/server-filesystem", "."]}})
        for t in servers.tools(reserved=agent.tools):
            agent.add_tool(t)
        ...
        servers.close()

    Args:
        servers: name → spec: `{"command", "args", "env", "cwd"}` (stdio) or
            `{"url", "headers"}` (streamable HTTP), or `StdioServer`/`HttpServer`.
        config: an MCP config file other MCP clients use (its shape: `MCP_CONFIG_SHAPE`);
            its servers come first, `servers` add to or replace them.
        call_timeout: seconds a tool call may take before its server counts as hung
            (it is then stopped, and started again on the next call).
        start_timeout: seconds a server may take to start and list its tools.
        retry_listing: seconds before `tools()` tries a server that failed to start again
            (a hung one costs `start_timeout` each time).
        on_status: receives one line for the user when a server starts, fails or restarts,
            when a tool is left out or changed before it is offered, when a server
            changes its tools, and when a result carried hidden characters; called in the
            thread that called this object (a sign-in line at once, from the MCP loop's).
        approval: asks the user before each call (unless allowed) and for a server's
            request for input; None calls at once (the code that offers the tools is then
            the one that decides) and refuses requests for input.
    """

    def __init__(
        self,
        servers: Mapping[str, ServerSpec | Mapping[str, Any]] | None = None,
        *,
        config: str | Path | None = None,
        call_timeout: float = CALL_TIMEOUT_S,
        start_timeout: float = START_TIMEOUT_S,
        retry_listing: float = RETRY_LISTING_S,
        on_status: Callable[[str], None] | None = None,
        approval: Approval | None = None,
    ) -> None:
        read = read_mcp_config(config) if config is not None else None
        specs = dict(read.servers) if read is not None else {}
        specs.update(server_specs(servers or {}))
        self.specs: dict[str, ServerSpec] = {}
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self.retry_listing = retry_listing
        self.on_status = on_status
        self.approval = approval
        self.changed: list[str] = []  # tool changes caught since the turn began
        # lines for on_status, given in the caller's thread (`_deliver`)
        self._lines = HeldLines(lambda: self.on_status, urgent=SIGN_IN)
        self._status, self._deliver = self._lines.hold, self._lines.deliver
        self._loop = LoopThread()
        self.catalog = Catalog(self._status, self.changed.append)  # what each server offers
        self._pool = ConnectionPool(self.specs, self.catalog, self._status, self)
        self._guard = threading.Lock()
        self._closed = False
        self._allowed_for: dict[str, str] = {}  # name → the server its allowances are for
        _LIVE.add(self)
        for name, spec in specs.items():
            self.add(name, spec)
        for line in read.skipped_lines() if read is not None else []:
            self._status(line)
        self._deliver()

    # -- configuration ---------------------------------------------------------------

    def add(self, name: str, spec: ServerSpec | Mapping[str, Any]) -> None:
        """Add a server (or replace one of the same name; its old process is stopped)."""
        checked = server_spec(name, spec)
        if name in self.specs:
            self.remove(name)
        self.specs[name] = checked
        self._closed = False
        self._bind(name, checked)
        if self.approval is not None:
            allow_configured(self.approval, name, checked.always_allow)
        self._deliver()

    def _bind(self, name: str, spec: ServerSpec) -> None:
        """What was allowed under `name` belongs to the server it was allowed for: a
        different server (command or URL) taking the name loses it, and is told so."""
        before, now = self._allowed_for.get(name), identity(spec)
        self._allowed_for[name] = now
        if before is None or before == now or self.approval is None:
            return
        if self.approval.revoke("mcp", name):
            self._status(f"MCP server {name!r} is now {spec.describe()}: what you had allowed "
                         f"for the earlier {name!r} does not carry over")

    def end_turn(self) -> None:
        """The turn is over: the tool changes caught during it stop making every call ask
        (an agent calls this when a chat ends; used alone, call it where a turn ends)."""
        self.changed.clear()

    @property
    def version(self) -> int:
        """Grows whenever what the servers offer changes (`offered_tools` tells what)."""
        return self.catalog.version

    def remove(self, name: str) -> None:
        """Forget a server and stop its process; unknown names raise `KeyError`."""
        if name not in self.specs:
            known = ", ".join(self.specs) or "none"
            raise KeyError(f"no MCP server named {name!r}; known: {known}")
        del self.specs[name]
        connection = self._pool.forget(name)
        if connection is not None:
            self._loop.run(connection.stop(), timeout=self.start_timeout + _MARGIN_S)
        self._deliver()

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def describe(self) -> list[str]:
        """One line per server: name, where it is, and its state (for a listing)."""
        lines, pool = [], self._pool
        for name, spec in self.specs.items():
            connection = pool.connections.get(name)
            if name in pool.problems:
                state = f"failed: {pool.problems[name]}"
            elif connection is not None and connection.alive:
                state = f"running, {self.catalog.count(name)}"
            elif name in pool.listed:
                state = f"stopped, {self.catalog.count(name)} (starts on the next call)"
            else:
                state = "not started"
            lines.append(f"{name} ({spec.type}: {spec.describe()}): {state}")
        return lines

    def start(self, name: str) -> list[McpTool]:
        """Start (or reach) one server now and list its tools; raises `ConnectionError`
        saying why it cannot start (not found, exited with its last stderr line, timed
        out)."""
        if name not in self.specs:
            raise KeyError(f"no MCP server named {name!r}")
        self._pool.failed_at.pop(name, None)
        try:
            self._loop.run(self._pool.connected(name), timeout=self._start_budget())
        except TimeoutError:
            raise ConnectionError(f"it did not start within {self.start_timeout:g} s") from None
        finally:
            self._deliver()
        return [t for t in self.tools() if t.server == name]

    # -- tools ------------------------------------------------------------------------

    def tools(self, reserved: Collection[str] = ()) -> list[McpTool]:
        """Every server's tools, starting the servers not yet listed (at once, in
        parallel). A server that fails is reported on `on_status` and left out (tried
        again by a `tools()` `retry_listing` seconds later, or by a call to it). Names
        in `reserved` (the agent's other tools) are never reused: a clashing MCP tool
        is offered as `server__tool`."""
        try:
            pending, pool = self.pending(), self._pool
            stale = [name for name, c in pool.connections.items() if c.tools_changed and c.alive]
            if pending or stale:
                try:  # the loop's own timeouts end it first; this is the waiting side's backstop
                    self._loop.run(pool.list_all(pending, stale),
                                   timeout=self.start_timeout + self._start_budget())
                except TimeoutError:
                    pass
            return self.offered_tools(reserved)
        finally:
            self._deliver()

    def pending(self) -> list[str]:
        """The servers `tools()` would start now (not listed, and not failed too lately)."""
        now, pool = time.monotonic(), self._pool
        return [name for name in self.specs if name not in pool.listed and (
            name not in pool.failed_at or now - pool.failed_at[name] >= self.retry_listing)]

    def offered_tools(self, reserved: Collection[str] = ()) -> list[McpTool]:
        """The tools offered now, from the listings already made (no server is reached)."""
        listing = {name: self.catalog.offered(name) for name in self.specs
                   if name in self._pool.listed}
        names = tool_names({server: [d.name for d in offered]
                            for server, offered in listing.items()}, reserved)
        return [make_tool(names[(server, offered.name)], server, offered, self.call)
                for server, definitions in listing.items() for offered in definitions]

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Call `tool` on `server`; returns (text for the model, whether it is an error).
        Never raises for the server's failures. Every server's changed listing is read
        first; once one changed this turn, the call asks even if allowed."""
        try:
            return self._call(server, tool, arguments)
        finally:
            self._deliver()

    def _call(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        if server not in self.specs:
            return f"there is no MCP server named {server!r} any more", True
        self._catch_up()
        if self.approval is not None:
            # Reach the server before asking: a restart may bring other definitions, and
            # those need the user's approval again. One that cannot start asks nothing.
            try:
                self._loop.run(self._pool.connected(server), timeout=self._start_budget())
            except (ConnectionError, TimeoutError) as error:
                return not_started(server, error)
            request = self.catalog.request(server, tool, arguments, self.changed)
            self._deliver()  # what changed is said before the question
            verdict = self.approval.decide(request)
            if not verdict.allowed:
                return verdict.reason, True
        try:  # the pool's own timeout ends the call first; this is the waiting side's backstop
            answer = self._loop.run(self._pool.call(server, tool, arguments),
                                    timeout=self._start_budget() + self.call_limit(server),
                                    paused=USER_CLOCK.seconds)
        except TimeoutError:
            return (f"the MCP server {server!r} did not answer {tool} in time; it will be "
                    "started again on the next call"), True
        self._catch_up()  # a change the call itself made is said with its result
        return answer

    def _catch_up(self) -> None:
        """List again every live server that said its tools changed, before any call: a
        change is caught (and said) before the call it might have steered."""
        stale = [name for name, c in self._pool.connections.items()
                 if c.tools_changed and c.alive]
        if stale:
            try:
                self._loop.run(self._pool.list_all([], stale),
                               timeout=self.start_timeout + _MARGIN_S)
            except TimeoutError:
                pass

    async def elicit(self, server: str, tool: str | None, params: Any) -> Any:
        """A server's request for input, asked through `approval.ask` in a worker thread
        (the MCP loop goes on meanwhile); refused when there is no approval to ask with."""
        ask = self.approval.ask if self.approval is not None else None
        return await asyncio.to_thread(_elicit.answer, params, server=server, tool=tool,
                                       ask=ask, say=self._status)

    def call_limit(self, server: str) -> float:
        """Seconds one call to `server` may take before it counts as hung: `call_timeout`,
        read at each call. The one place a call's limit is decided: the pool's timeout and
        the backstop in `call` both read it, so a per-server or per-tool limit goes here
        (changed in one of them only, a longer limit would be cut at the other)."""
        return self.call_timeout

    def _start_budget(self) -> float:
        """How long a start may take: its timeout, a sign-in's when a server may ask for
        one, and the margin."""
        remote = any(isinstance(s, HttpServer) and s.oauth is not False
                     for s in self.specs.values())
        return self.start_timeout + (SIGN_IN_TIMEOUT_S if remote else 0.0) + _MARGIN_S

    # -- lifetime ---------------------------------------------------------------------

    def close(self) -> None:
        """Stop every server process this object started (idempotent; done at exit too).
        The servers start again if a tool is called after this."""
        with self._guard:
            if self._closed and not self._pool.connections:
                return
            self._closed = True
            if self._pool.connections or self._pool.stopping:
                try:
                    self._loop.run(self._pool.stop_all(), timeout=self.start_timeout + _MARGIN_S)
                except (TimeoutError, RuntimeError):
                    pass
            self._pool.locks.clear()  # they belong to the loop stopped below
            self._loop.stop()

    def __enter__(self) -> McpServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"McpServers({', '.join(self.specs) or 'none'})"


@atexit.register
def _close_all() -> None:
    for servers in list(_LIVE):
        servers.close()
