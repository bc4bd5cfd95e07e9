"""MCP servers as tool sources, the agent room's door to them: the config API
(`read_mcp_config`, `load_mcp_config`, `server_spec`, `server_specs`, `StdioServer`,
`HttpServer`, `McpConfig`; what switches a server off, `DISABLED_FORMS` and `is_disabled`;
where a file keeps its servers, `SERVER_KEYS`), `McpServers` (what a session uses) and
`McpTool`; and the rules a reader of the folder looks for: what a listing offers and
what changed in it (`read_listing`, `definition`, `fingerprint`, `changes`, `Catalog`,
bounded by `MAX_SERVER` and `MAX_DESCRIPTION`), a call's result as text (`read_result`,
`result_text`) and tools from a listing (`make_tool`, `tool_names`, `valid_name`). The
session machinery (one session per server on a loop of our own: `_connection`,
`_loop_thread`, `_pool`, `_stderr`) stays in its modules: nothing outside the folder uses
it, and its tests import it there. `nbagent.mcp` is the user's door.
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
    from ._content import read_result, result_text
    from ._definitions import MAX_DESCRIPTION, MAX_SERVER, definition, fingerprint
    from ._servers import McpServers
    from ._tools import McpTool, make_tool, tool_names, valid_name

# The names load on first use, not here: `McpServers` brings in the MCP SDK, which a
# session that reads only a config file (or a tool's definition) has no need to import.
_PARTS = ("._config", "._tools", "._definitions", "._catalog", "._content", "._servers")

__all__ = [
    "DISABLED_FORMS",
    "MAX_DESCRIPTION",
    "MAX_SERVER",
    "SERVER_KEYS",
    "Catalog",
    "HttpServer",
    "McpConfig",
    "McpServers",
    "McpTool",
    "StdioServer",
    "changes",
    "definition",
    "fingerprint",
    "is_disabled",
    "load_mcp_config",
    "make_tool",
    "read_listing",
    "read_mcp_config",
    "read_result",
    "result_text",
    "server_spec",
    "server_specs",
    "tool_names",
    "valid_name",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = lazy_door(globals(), _PARTS)  # see above
