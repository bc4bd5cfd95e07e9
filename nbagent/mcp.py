"""MCP servers as tool sources, through the official `mcp` SDK (`pip install
"jupyter-nbagent[mcp]"`): `McpServers` runs their sessions on a loop of its own and gives
their tools as nbagent `Tool`s; `Agent(mcp_servers=...)` and `NBAGENT_MCP_CONFIG` use it.
Re-exported from the agent room, where it lives. Importing this module imports the SDK.
"""

from __future__ import annotations

from .agent.mcp._config import HttpServer, StdioServer, load_mcp_config
from .agent.mcp._servers import McpServers
from .agent.mcp._tools import McpTool
from .engine._exceptions import McpConfigError, McpToolError

__all__ = [
    "HttpServer",
    "McpConfigError",
    "McpServers",
    "McpTool",
    "McpToolError",
    "StdioServer",
    "load_mcp_config",
]
