"""`Toolbox`: every tool an agent offers — the built-in notebook tools (made anew for each
session, over its output store and archive), the user's own functions, and the tools of
the MCP servers it connects to (listed on the first chat or when their state is asked
for, never at configuration), and the `Approval` their calls ask.
"""

from __future__ import annotations

import threading
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

    What goes wrong with an MCP server (it could not start, died or hung) is kept for
    `warn_problems`, which says it in the thread that chats: the servers' own event loop
    runs in a thread of its own, and a line written from there could land in another cell.
    """

    def __init__(self, own: Iterable[Tool | Callable[..., Any]] = (), *,
                 mcp_servers: ServerSpecs | None = None, mcp_config: str | None = None,
                 call_timeout: float = 300.0, approval: Approval | None = None) -> None:
        self.own = [as_tool(t) for t in own]
        self.approval = approval if approval is not None else Approval()
        self.builtins: list[Tool] = []
        self._mcp_tools: list[Tool] = []
        self._call_timeout = call_timeout
        self._problems: list[str] = []
        self._guard = threading.Lock()
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
        same object until then: read it, do not change it)."""
        return self._schemas

    # -- MCP servers ---------------------------------------------------------------------

    def unlisted_servers(self) -> list[str]:
        """The MCP servers whose tools are not offered yet (the next chat starts them)."""
        listed = {getattr(t, "server", None) for t in self._mcp_tools}
        return [name for name in self.mcp or () if name not in listed]

    def list_mcp_tools(self) -> None:
        """Start the MCP servers not listed yet and offer their tools (I/O: called when a
        chat starts). A server that fails is reported by `warn_problems` and left out."""
        if self.mcp is None or not len(self.mcp):
            return
        reserved = [t.name for t in [*self.builtins, *self.own]]
        self._mcp_tools = list(self.mcp.tools(reserved=reserved))
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
            self.warn_problems()  # here, in the caller's cell, not at the next chat
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
        if not text.startswith(("starting ", "restarting ")):  # progress is only live news
            with self._guard:
                self._problems.append(text)

    def warn_problems(self) -> None:
        """Say, as an `NbagentWarning` each, what went wrong with an MCP server since the
        last call (the model already read it in the tool's result)."""
        with self._guard:
            problems, self._problems = self._problems, []
        for text in problems:
            warnings.warn(f"nbagent: {text}", NbagentWarning, stacklevel=3)

    def _gather(self) -> None:
        self.tools = {t.name: t for t in [*self.builtins, *self.own, *self._mcp_tools]}
        self._schemas = [t.schema for t in self.tools.values()]


def _config_file(path: str) -> McpConfig:
    from .mcp._config import read_mcp_config

    return read_mcp_config(path)
