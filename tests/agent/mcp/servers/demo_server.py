"""A small MCP server for the tests, written with the SDK's own server API (`MCPServer`):
tools with arguments, a slow one, a failing one, one that kills its own process, one that
returns an image and one an embedded resource. `python demo_server.py` serves over stdio;
`python demo_server.py --http PORT` over streamable HTTP on 127.0.0.1 (`--sse PORT`: SSE)."""

from __future__ import annotations

import os
import sys
import time

if __name__ == "__main__" and os.environ.get("DEMO_FAIL_AT_START"):
    # a server that fails before it speaks MCP: said before the SDK's import (~1 CPU-s)
    print("demo server: missing DEMO_TOKEN", file=sys.stderr, flush=True)
    sys.exit(2)

import mcp_types as types  # noqa: E402 (after the start that fails without it)
from mcp.server.mcpserver import Context, Image, MCPServer  # noqa: E402

server = MCPServer("demo")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8  # 2,056 bytes


@server.tool()
def add(a: int, b: int = 2) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text, and the seconds this function took, after a tab."""
    start = time.perf_counter()
    reply = text
    return f"{reply}\t{time.perf_counter() - start:.9f}"


@server.tool()
def slow(seconds: float) -> str:
    """Sleep, then say so."""
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def fail(reason: str = "it broke") -> str:
    """Always raises."""
    raise ValueError(reason)


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
def die() -> str:
    """End this server's process at once, mid-call."""
    os._exit(3)


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one HTTP request header ('' when absent or over stdio)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool()
def picture() -> Image:
    """A small PNG image."""
    return Image(data=PNG, format="png")


@server.tool()
def report() -> list[types.ContentBlock]:
    """A text line, an embedded text resource and a link to a resource."""
    return [
        types.TextContent(text="see the attached report"),
        types.EmbeddedResource(resource=types.TextResourceContents(
            uri="file:///tmp/report.txt", mime_type="text/plain", text="all rows valid")),
        types.ResourceLink(uri="file:///tmp/data.csv", name="data.csv", mime_type="text/csv",
                           size=1234),
    ]


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) > 2 and sys.argv[1] == "--sse":  # the protocol's older HTTP transport
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
