"""Writes examples/mcp.ipynb: an MCP server written with the SDK, its tools offered to the
agent, a chat that calls them, and what a failing call looks like (run it after editing a
cell here; tests/real/test_mcp_example.py executes the notebook)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent

SERVER = '''%%writefile $server_path
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("sales")
REVENUE = {"north": 2710.5, "south": 2085.75, "east": 1430.25, "west": 0.0}


@server.tool()
def list_regions() -> str:
    """The sales regions, one per line."""
    return "\\n".join(REVENUE)


@server.tool()
def revenue(region: str) -> str:
    """Total revenue of one region this quarter, in euros."""
    if region not in REVENUE:
        raise ToolError(f"no region {region!r}; known: {', '.join(REVENUE)}")
    return f"{region}: {REVENUE[region]:,.2f} EUR"


if __name__ == "__main__":
    server.run()  # over stdio: nbagent starts it and talks to it through its stdin/stdout'''

CONNECT = '''import sys

from nbagent.agent.mcp._servers import McpServers

# The same shape as an "mcpServers" entry in Claude Desktop's or Cursor's config file.
servers = McpServers({"sales": {"command": sys.executable, "args": [server_path]}},
                     on_status=print)
for t in servers.tools():
    print(f"{t.name}: {t.description}")'''

AGENT = '''import nbagent
from nbagent.testing import ScriptedModel, calls


# No API key needed here: a scripted stand-in plays the model (it calls the two MCP tools,
# then answers from what the second one returned). With a real model:
# nbagent.new_session(model="anthropic/claude-sonnet-4-20250514")
def answer(messages):
    found = [m["content"] for m in messages if m["role"] == "tool"][-1]
    return f"The north region leads: {found}."

stand_in = ScriptedModel([calls(("list_regions", {})), calls(("revenue", {"region": "north"})),
                          answer])
agent = nbagent.new_session(model=stand_in)
for t in servers.tools(reserved=agent.tools):
    agent.add_tool(t)'''

FAILURE = '''# A tool error (or a server that dies or hangs) is a result the model can read; it
# never ends the chat, and the next call starts a stopped server again.
servers.call("sales", "revenue", {"region": "atlantis"})'''

MCP = [
    new_markdown_cell(
        "# MCP tools\n\nAn MCP server turns your database, docs or issue tracker into tools "
        "the agent can call. This notebook writes a tiny one with the official `mcp` SDK "
        "(`pip install \"jupyter-nbagent[mcp]\"`), offers its tools to the agent, and chats. "
        "docs/tools.md has the details (HTTP servers, the `mcpServers` config file, failures)."
    ),
    new_code_cell("%load_ext nbagent"),
    new_code_cell("import os\nimport tempfile\n\n"
                  "server_path = os.path.join(tempfile.mkdtemp(), \"sales_server.py\")"),
    new_code_cell(SERVER),
    new_markdown_cell("Start the server and list its tools: their names, descriptions and "
                      "schemas are the server's own."),
    new_code_cell(CONNECT),
    new_code_cell(AGENT),
    new_code_cell("%%chat\nWhich region sold the most?"),
    new_markdown_cell("The tools' schemas take room in the window like any tool's:"),
    new_code_cell("%context"),
    new_code_cell(FAILURE),
    new_code_cell("servers.close()  # stops the server process (also done when Python exits)"),
]


def write(name: str, cells: list[nbformat.NotebookNode]) -> None:
    notebook = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(notebook, HERE / name)


if __name__ == "__main__":
    write("mcp.ipynb", MCP)
