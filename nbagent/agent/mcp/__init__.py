"""MCP servers as tool sources: specs and the config file (`_config`), one session per
server on a loop of our own (`_connection`, `_loop_thread`), their tools as `Tool`s
(`_tools`, `_content`), and `McpServers`, which a session uses (`_servers`, its
sessions on the loop `_pool`).

The door for the agent room: the config API (`read_mcp_config`, `load_mcp_config`,
`server_spec`, `server_specs`, `StdioServer`, `HttpServer`, `McpConfig`), `McpServers`
and `McpTool`. `nbagent.mcp` is the user's door.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._doors import lazy_door

if TYPE_CHECKING:
    from ._config import (
        HttpServer,
        McpConfig,
        StdioServer,
        load_mcp_config,
        read_mcp_config,
        server_spec,
        server_specs,
    )
    from ._servers import McpServers
    from ._tools import McpTool

# The names load on first use, not here: `McpServers` brings in the MCP SDK, which a
# session that reads only a config file (or a tool's definition) has no need to import.
_PARTS = ("._config", "._tools", "._servers")

__all__ = [
    "HttpServer",
    "McpConfig",
    "McpServers",
    "McpTool",
    "StdioServer",
    "load_mcp_config",
    "read_mcp_config",
    "server_spec",
    "server_specs",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = lazy_door(globals(), _PARTS)  # see above
