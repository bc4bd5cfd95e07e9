"""An MCP server that asks its user for input (elicitation) from inside a tool, written
with the SDK's own server API (`MCPServer`, `Context.elicit`); serves over stdio. `signup`
asks for a name, an age, a plan (with a default) and whether to subscribe, and returns
what came back: the action and the data the server received."""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("elicit")


class Signup(BaseModel):
    name: str = Field(description="Your full name")
    age: int = Field(description="In years")
    plan: Literal["free", "pro"] = "free"
    newsletter: bool = False


@server.tool()
async def signup(reason: str, ctx: Context) -> str:
    """Sign the user up, asking them for their details."""
    result = await ctx.elicit(f"Sign-up for {reason}: your details, please.", schema=Signup)
    data = result.data.model_dump() if result.action == "accept" else None
    return f"{result.action}: {data}"


if __name__ == "__main__":
    server.run()
