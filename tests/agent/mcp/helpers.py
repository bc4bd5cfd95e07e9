"""An MCP tool as a server lists it, for the tests of what a listing becomes."""

from __future__ import annotations

from typing import Any

import mcp_types as types

OBJECT: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}


def tool(name: str = "t", description: str = "Does it.", schema: dict[str, Any] | None = None,
         **extra: Any) -> types.Tool:
    return types.Tool(name=name, description=description,
                      input_schema=schema if schema is not None else OBJECT, **extra)
