"""One live session with one MCP server, on the MCP loop: an owner task enters the SDK's
`Client` (which starts the stdio process or opens the HTTP connection), lists the
tools, and holds the session open until `stop()`; calls run beside it. Leaving the
`Client` is what stops the server's process (stdin closed, then SIGTERM, then SIGKILL).
We introduce ourselves as nbagent (clientInfo) with the initialize handshake (protocol
2025-11-25 and before); a server's `tools/list_changed` notification marks the listing
stale, and the next listing asks again. A server's request for input (elicitation) goes to
the `elicit` callable the session was given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from importlib import metadata
from typing import Any

try:
    import anyio
    import mcp_types as types
    from mcp import Client, StdioServerParameters, stdio_client
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.exceptions import MCPError
except ImportError as missing:  # the optional extra
    raise ImportError("MCP servers need the mcp package: pip install "
                      "'jupyter-nbagent[mcp]'") from missing

from . import _sdk_log
from ._config import HttpServer, ServerSpec
from ._oauth import SIGN_IN_TIMEOUT_S, sign_in
from ._stderr import StderrTail

_LIST_PAGES = 100  # a server that pages forever cannot hang the listing
# The handshake era (protocol 2025-11-25 and before), which every server the SDK builds
# serves and the servers of other SDKs speak: it is the era in which a server can say that
# a tool requires task augmentation (2026-07-28 left tasks out of the core protocol, and
# the SDK's servers drop the marker there, so such a tool would be offered and fail).
PROTOCOL_MODE = "legacy"
Elicit = Callable[[str, str | None, Any], Awaitable[Any]]  # server, tool, params → result


def client_info() -> types.Implementation:
    """Who we are to a server: nbagent and its version (not the SDK's default name)."""
    try:
        version = metadata.version("jupyter-nbagent")
    except metadata.PackageNotFoundError:
        version = "0"
    return types.Implementation(name="nbagent", title="nbagent", version=version)


def failure_text(error: BaseException) -> str:
    """A short reason for a failure, from inside the exception groups anyio raises."""
    while isinstance(inner := getattr(error, "exceptions", None), tuple) and inner:
        error = inner[0]  # an exception group (a builtin from Python 3.11)
    if isinstance(error, MCPError):
        if error.code == types.CONNECTION_CLOSED:
            return "the server closed the connection (it exited?)"
        return error.error.message
    if isinstance(error, FileNotFoundError):
        return f"{error.filename or 'the command'} was not found"
    if isinstance(error, TimeoutError):
        return str(error) or "it did not answer in time"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class Connection:
    """One server's session; made and used only on the MCP loop."""

    def __init__(self, name: str, spec: ServerSpec,
                 report: Callable[[str], None] | None = None,
                 elicit: Elicit | None = None) -> None:
        self.name = name
        self.spec = spec
        self.tools: list[types.Tool] = []
        self.tools_changed = False  # the server said its tool list changed since listing
        self.calling: str | None = None  # the tool whose call is under way (for a question)
        self._report = report  # one line for the user about this server
        self._elicit = elicit
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[list[types.Tool]] = asyncio.get_running_loop().create_future()
        # a failure that arrives after `open` gave up waiting is nobody's to read: mark it
        # read, or asyncio prints "Future exception was never retrieved" into the notebook
        self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._owner: asyncio.Task[None] | None = None
        self._stderr: StderrTail | None = None
        self._refused: str | None = None  # why an HTTP server refused us (401, 403)
        self._signing_in: Callable[[], bool] = lambda: False  # a sign-in waits for the user
        self._scope: anyio.CancelScope | None = None

    async def open(self, timeout: float) -> list[types.Tool]:
        """Start the server (or connect to it) and list its tools; on any failure the
        session is stopped again and the error raised."""
        self._owner = asyncio.get_running_loop().create_task(self._hold(), name=self.name)
        try:
            try:
                self.tools = await asyncio.wait_for(asyncio.shield(self._ready), timeout)
            except TimeoutError:
                if not self._signing_in():
                    raise
                # a person is signing in: give them the sign-in's own time
                self.tools = await asyncio.wait_for(asyncio.shield(self._ready),
                                                    SIGN_IN_TIMEOUT_S)
        except BaseException as error:
            if isinstance(error, TimeoutError):
                error = TimeoutError(f"it did not start within {timeout:g} s")
            await self.stop()  # the process is gone: what it wrote last can be read whole
            raise await self._with_stderr(error) from None
        return self.tools

    @property
    def alive(self) -> bool:
        """Whether the session can still carry a call (its server has not gone away)."""
        if self._client is None or self._owner is None or self._owner.done():
            return False
        # The SDK marks the dispatcher closed once the transport ends (the process exited,
        # the HTTP session was dropped); no public flag says so. Without it, the call
        # itself reports the closed connection.
        dispatcher = getattr(self._client.session, "_dispatcher", None)
        return not getattr(dispatcher, "_closed", False)

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if self._client is None:
            raise MCPError(-32000, "Connection closed")
        self.calling = tool
        try:
            return await self._client.call_tool(tool, arguments)
        finally:
            self.calling = None

    async def stop(self) -> None:
        """End the session and stop the server's process; waits until it is gone."""
        self._stop.set()
        if self._client is None and self._scope is not None:
            self._scope.cancel()  # still starting: the SDK's shielded cleanup stops the process
        if self._owner is not None and not self._owner.done():
            try:
                await asyncio.shield(self._owner)
            except BaseException:  # the owner records its own failure; stopping goes on
                pass
        if self._stderr is not None:
            self._stderr.release()

    def stop_soon(self) -> asyncio.Task[None]:
        """End the session without waiting for it (a hung server takes seconds to stop)."""
        self._stop.set()
        return asyncio.get_running_loop().create_task(self.stop())

    async def relist(self) -> list[types.Tool]:
        """List the tools again (after a `tools/list_changed`)."""
        if self._client is None:
            raise MCPError(-32000, "Connection closed")
        self.tools_changed = False
        self.tools = await self._list(self._client)
        return self.tools

    async def _hold(self) -> None:
        _sdk_log.install()
        _sdk_log.CURRENT.set(self._report)  # the SDK's tasks below inherit it
        try:
            with anyio.CancelScope() as self._scope:
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(self._client_for(stack))
                    if self._stderr is not None:
                        self._stderr.release()  # the child has its own copy now
                    tools = await self._list(client)
                    self._client = client
                    if not self._ready.done():
                        self._ready.set_result(tools)
                    await self._stop.wait()
        except BaseException as error:
            if not self._ready.done():
                self._ready.set_exception(error)
            if not isinstance(error, Exception):
                raise
        finally:
            self._client = None
            if not self._ready.done():
                self._ready.set_exception(ConnectionError("the session ended"))

    def _client_for(self, stack: AsyncExitStack) -> Client:
        spec = self.spec
        if isinstance(spec, HttpServer):
            auth = self._sign_in(spec)
        if isinstance(spec, HttpServer) and spec.type == "sse":  # the protocol's older transport
            return self._client_over(sse_client(spec.url, headers=dict(spec.headers) or None,
                                                auth=auth))
        if isinstance(spec, HttpServer):
            http = create_mcp_http_client(headers=dict(spec.headers) or None, auth=auth)
            http.event_hooks["response"].append(self._note_refusal)
            stack.push_async_callback(http.aclose)
            return self._client_over(streamable_http_client(spec.url, http_client=http))
        # the server's own messages go to a bounded tail, not the notebook; it explains a
        # failure
        self._stderr = StderrTail()
        params = StdioServerParameters(command=spec.command, args=list(spec.args),
                                       env=dict(spec.env) or None, cwd=spec.cwd)
        return self._client_over(stdio_client(params, errlog=self._stderr.writer))

    def _client_over(self, transport: Any) -> Client:
        return Client(transport, cache=None, client_info=client_info(), mode=PROTOCOL_MODE,
                      message_handler=self._on_message, elicitation_callback=self._on_elicit)

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        """A server's request for input (`elicitation/create`): answered by `elicit`, or
        refused when this session has no one to ask."""
        if self._elicit is None:
            return types.ErrorData(code=types.INVALID_REQUEST,
                                   message="nbagent asks no one for this server's input")
        return await self._elicit(self.name, self.calling, params)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed = True
        elif (isinstance(message, Exception) and self._report is not None
              and id(message) not in _sdk_log.REPORTED):
            self._report(f"it sent something that is not an MCP message "
                         f"({_sdk_log.reason(message)})")

    async def _list(self, client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (empty for HTTP servers); only the
        last few KB are ever kept."""
        return self._stderr.tail() if self._stderr is not None else ""

    async def last_words(self) -> str:
        """`stderr_tail` once the drain has read what the server wrote before it exited
        (a reader thread runs behind the process; the wait is bounded: `_stderr.SETTLE_S`).
        For a server that has exited or been stopped."""
        if self._stderr is None:
            return ""
        await self._stderr.settled()
        return self._stderr.tail()

    def _sign_in(self, spec: HttpServer) -> Any:
        """The SDK's OAuth provider, unless the spec says no or sends its own credentials."""
        given = {key.lower() for key in spec.headers}
        if spec.oauth is False or "authorization" in given:
            return None
        settings = spec.oauth if isinstance(spec.oauth, dict) else {}
        provider, self._signing_in = sign_in(spec.url, settings,
                                             self._report or (lambda _: None))
        return provider

    async def _note_refusal(self, response: Any) -> None:
        """Keep why an HTTP server refused us: the SDK reports any status as 'Server
        returned an error response'."""
        if response.status_code in (401, 403):
            challenge = response.headers.get("www-authenticate", "")
            self._refused = (f"the server answered HTTP {response.status_code}: it needs "
                             "sign-in, and none succeeded" + (f" ({challenge[:120]})"
                                                             if challenge else ""))

    async def _with_stderr(self, error: BaseException) -> Exception:
        reason = failure_text(error)
        if self._refused is not None:  # say why, beside the SDK's words for any status
            vague = reason == "Server returned an error response"
            reason = self._refused + ("" if vague else f"; {reason}")
        tail = await self.last_words()
        return ConnectionError(f"{reason} (its last output: {tail})" if tail else reason)
