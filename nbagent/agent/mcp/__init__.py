"""MCP servers as tool sources, the agent room's door to them: the config API
(`read_mcp_config`, `load_mcp_config`, `server_spec`, `server_specs`, `StdioServer`,
`HttpServer`, `McpConfig`; what switches a server off, `DISABLED_FORMS` and `is_disabled`;
where a file keeps its servers, `SERVER_KEYS`), `McpServers` (what a session uses) and
`McpTool`; and the parts sibling modules and tests use: what a listing offers
(`read_listing`, `definition`, `fingerprint`, `changes`, `Catalog`, bounded by
`MAX_SERVER` and `MAX_DESCRIPTION`), one session per server on a loop of our own
(`Connection`, `client_info`, `failure_text`, `LoopThread`, `StderrTail`, `not_started`,
`within`), a call's result (`read_result`, `result_text`) and tools from a listing
(`make_tool`, `tool_names`, `valid_name`). `nbagent.mcp` is the user's door.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._doors import lazy_door

if TYPE_CHECKING:
    from ._catalog import Catalog, changes, read_listing
    from ._config import (
        DISABLED_FORMS,
        SERVER_KEYS,
        HttpServer,
        McpConfig,
        StdioServer,
        is_disabled,
        load_mcp_config,
        read_mcp_config,
        server_spec,
        server_specs,
    )
    from ._connection import Connection, client_info, failure_text
    from ._content import read_result, result_text
    from ._definitions import MAX_DESCRIPTION, MAX_SERVER, definition, fingerprint
    from ._loop_thread import LoopThread
    from ._pool import not_started, within
    from ._servers import McpServers
    from ._stderr import StderrTail
    from ._tools import McpTool, make_tool, tool_names, valid_name

# The names load on first use, not here: `McpServers` brings in the MCP SDK, which a
# session that reads only a config file (or a tool's definition) has no need to import.
_PARTS = ("._config", "._tools", "._definitions", "._catalog", "._loop_thread", "._stderr",
          "._servers", "._connection", "._content", "._pool")

__all__ = [
    "DISABLED_FORMS",
    "MAX_DESCRIPTION",
    "MAX_SERVER",
    "SERVER_KEYS",
    "Catalog",
    "Connection",
    "HttpServer",
    "LoopThread",
    "McpConfig",
    "McpServers",
    "McpTool",
    "StderrTail",
    "StdioServer",
    "changes",
    "client_info",
    "definition",
    "failure_text",
    "fingerprint",
    "is_disabled",
    "load_mcp_config",
    "make_tool",
    "not_started",
    "read_listing",
    "read_mcp_config",
    "read_result",
    "result_text",
    "server_spec",
    "server_specs",
    "tool_names",
    "valid_name",
    "within",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = lazy_door(globals(), _PARTS)  # see above
