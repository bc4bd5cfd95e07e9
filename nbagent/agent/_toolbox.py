"""`Toolbox`: every tool an agent offers — the built-in notebook tools (made anew for each
session, over its output store and archive), the user's own functions, and the tools of
the MCP servers it connects to (listed on the first chat or when their state is asked
for, never at configuration), and the `Approval` their calls ask.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..engine._exceptions import NbagentError, NbagentWarning
from ..engine._tokens import count_tools_tokens, estimate_tokens
from ._approval import Approval
from .tools._tool import Tool, as_tool

if TYPE_CHECKING:  # the MCP SDK is imported only when a server is configured
    from .mcp._config import McpConfig
    from .mcp._servers import McpServers
    from .mcp._tools import McpTool

ServerSpecs = Mapping[str, Mapping[str, Any]]


class Toolbox:
    """The tools by name, in the order they are offered (built-ins, the user's, MCP).

    Args:
        own: the user's tools (functions or `@tool`s).
        mcp_servers: MCP servers by name (`{"command", "args", "env"}` or `{"url"}`).
        mcp_config: an MCP config file other MCP clients use (its shape:
            `mcp._config.MCP_CONFIG_SHAPE`; a broken file is a warning, not an error: the
            chat goes on without it).
        call_timeout: seconds an MCP tool call may take.
        approval: what MCP tool calls may do without asking, and how to ask (default:
            ask every call with `input()`).
        say: receives each line about an MCP server for the user (it could not start,
            restarted, changed its tools, a result carried hidden characters), once, when
            it happens, in the thread that called (`McpServers` keeps its loop's lines
            until then); default: an `NbagentWarning` each.

    A server's tools that change while a turn runs are offered from the next request on
    (`schemas` reads them again); `end_turn` tells the servers the turn is over.
    """

    def __init__(self, own: Iterable[Tool | Callable[..., Any]] = (), *,
                 mcp_servers: ServerSpecs | None = None, mcp_config: str | None = None,
                 call_timeout: float = 300.0, approval: Approval | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.own = [as_tool(t) for t in own]
        self.approval = approval if approval is not None else Approval()
        self.builtins: list[Tool] = []
        self._mcp_tools: list[Tool] = []
        self._mcp_version = -1  # the servers' offer `_mcp_tools` was built from
        self._call_timeout = call_timeout
        self._say = say
        self.mcp: McpServers | None = None
        if mcp_config:
            # entry by entry: the usable servers load, each skipped one is named with why
            try:
                config = _config_file(mcp_config)
                for name, checked in config.servers.items():
                    self._servers().add(name, checked)
            except (OSError, ValueError, NbagentError) as error:
                warnings.warn(f"nbagent: the MCP config {mcp_config} was not used: {error}",
                              NbagentWarning, stacklevel=3)
            else:
                for line in config.skipped_lines():
                    warnings.warn(f"nbagent: {line}", NbagentWarning, stacklevel=3)
        for name, spec in (mcp_servers or {}).items():
            self._servers().add(name, spec)  # a bad spec is the caller's error: raised
        self.tools: dict[str, Tool] = {}
        self._schemas: list[dict[str, Any]] = []
        self._gather()

    def offer_builtins(self, tools: list[Tool]) -> None:
        self.builtins = tools
        self._gather()

    def add(self, candidate: Tool | Callable[..., Any]) -> Tool:
        """One more tool of the user's; a tool of the same name is replaced."""
        made = as_tool(candidate)
        self.own = [t for t in self.own if t.name != made.name] + [made]
        self._gather()
        return made

    def schemas(self) -> list[dict[str, Any]]:
        """The schemas sent with each request: built when the tools change (one list, the
        same object until then: read it, do not change it). An MCP server's listing that
        changed since (a call caught it) is offered from here on, without reaching it."""
        if self.mcp is not None and self._mcp_version != -1 \
                and self.mcp.version != self._mcp_version:
            self._offer_mcp(self.mcp.offered_tools(reserved=self._reserved()))
        return self._schemas

    # -- MCP servers ---------------------------------------------------------------------

    def unlisted_servers(self) -> list[str]:
        """The MCP servers the next chat starts (not listed yet, and not failed lately)."""
        return self.mcp.pending() if self.mcp is not None else []

    def list_mcp_tools(self) -> None:
        """Start the MCP servers not listed yet and offer their tools (I/O: called when a
        chat starts). A server that fails is said (`say`) and left out."""
        if self.mcp is None or not len(self.mcp):
            return
        self._offer_mcp(self.mcp.tools(reserved=self._reserved()))

    def _reserved(self) -> list[str]:
        return [t.name for t in [*self.builtins, *self.own]]

    def _offer_mcp(self, tools: list[McpTool]) -> None:
        if self.mcp is not None:
            self._mcp_version = self.mcp.version
        self._mcp_tools = list(tools)
        self._gather()

    def add_mcp_server(self, name: str, spec: Mapping[str, Any]) -> None:
        """Connect to one more MCP server (its tools are listed on the next chat)."""
        self._servers().add(name, spec)
        self._mcp_tools = [t for t in self._mcp_tools if getattr(t, "server", None) != name]
        self._gather()

    def remove_mcp_server(self, name: str) -> None:
        """Disconnect an MCP server (its process stops); an unknown name raises KeyError."""
        if self.mcp is None:
            raise KeyError(f"no MCP server named {name!r}; known: none")
        self.mcp.remove(name)
        self._mcp_tools = [t for t in self._mcp_tools if getattr(t, "server", None) != name]
        self._gather()

    def mcp_servers(self, *, start: bool = False) -> list[tuple[str, str, list[str]]]:
        """(name, state, the tools it offers) for each MCP server; `start` starts the
        servers not listed yet first (one that cannot start says why in its state)."""
        if self.mcp is None:
            return []
        if start:
            self.list_mcp_tools()
        states = dict(zip(self.mcp, self.mcp.describe(), strict=True))
        return [(name, states[name].partition("): ")[2] or states[name],
                 [t.name for t in self._mcp_tools if getattr(t, "server", None) == name])
                for name in self.mcp]

    def mcp_schema_tokens(self, count_text: Callable[[str], int] | None) -> dict[str, int]:
        """Tokens each MCP server's offered tool schemas take in a request, by server
        (counted as the breakdown counts the tool schemas)."""
        by_server: dict[str, list[dict[str, Any]]] = {}
        for made in self._mcp_tools:
            by_server.setdefault(getattr(made, "server", ""), []).append(made.schema)
        return {server: count_tools_tokens(schemas, count_text or estimate_tokens)
                for server, schemas in by_server.items()}

    def close(self) -> None:
        """Stop every MCP server process (they start again on the next call)."""
        if self.mcp is not None:
            self.mcp.close()

    def _servers(self) -> McpServers:
        if self.mcp is None:
            try:
                from .mcp._servers import McpServers
            except ImportError as missing:  # the optional extra is not installed
                raise NbagentError(f"MCP servers need the official SDK ({missing.name} is "
                                   "missing): python -m pip install 'jupyter-nbagent[mcp]'"
                                   ) from missing

            self.mcp = McpServers(on_status=self._status, call_timeout=self._call_timeout,
                                  approval=self.approval)
        return self.mcp

    def _status(self, text: str) -> None:
        if "needs you to sign in" in text:  # the user acts now, while the start waits
            try:
                warnings.warn(f"nbagent: {text}", NbagentWarning, stacklevel=2)
            except Exception:  # warnings turned into errors must not break the sign-in
                pass
            return
        if text.startswith("starting "):  # a first start is progress: the chat says its own
            return
        if self._say is not None:
            self._say(text)
        else:
            warnings.warn(f"nbagent: {text}", NbagentWarning, stacklevel=2)

    def end_turn(self) -> None:
        """A chat ended: tool changes caught during it no longer make every MCP call ask."""
        if self.mcp is not None:
            self.mcp.end_turn()

    def _gather(self) -> None:
        self.tools = {t.name: t for t in [*self.builtins, *self.own, *self._mcp_tools]}
        self._schemas = [t.schema for t in self.tools.values()]


def _config_file(path: str) -> McpConfig:
    from .mcp._config import read_mcp_config

    return read_mcp_config(path)
