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

AGENT = '''import sys

import nbagent
from nbagent.testing import ScriptedModel, calls


# No API key needed here: a scripted stand-in plays the model (it calls the two MCP tools,
# then answers from what the second one returned). With a real model, pass
# model="anthropic/claude-sonnet-4-20250514" instead.
def answer(messages):
    found = [m["content"] for m in messages if m["role"] == "tool"][-1]
    return f"The north region leads: {found}."

stand_in = ScriptedModel([calls(("list_regions", {})), calls(("revenue", {"region": "north"})),
                          answer, calls(("revenue", {"region": "atlantis"})),
                          "There is no region called atlantis."])
# The same shape as an "mcpServers" entry in Claude Desktop's or Cursor's config file;
# NBAGENT_MCP_CONFIG can name such a file instead.
agent = nbagent.new_session(model=stand_in, mcp_servers={
    "sales": {"command": sys.executable, "args": [server_path]}})
# Each MCP tool call asks you first (the kernel's input prompt). This server is our own,
# so its tools may run without asking; %nbagent mcp allow sales says the same.
agent.approval.allow("mcp", "sales")
agent.mcp_servers()  # nothing starts until the first chat'''

SERVERS = '''for name, state, tools in agent.mcp_servers():
    print(f"{name}: {state}; tools: {', '.join(tools)}")
for t in agent.tools.values():
    print(f"{t.name}: {t.description}")'''

FAILURE = '''# A tool error (or a server that dies or hangs) is a result the model can read; it
# never ends the chat, and the next call starts a stopped server again.
print([m["content"] for m in agent.history if m["role"] == "tool"][-1])'''

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
    new_markdown_cell("Offer the server's tools to the agent; it starts the server on the "
                      "first chat."),
    new_code_cell(AGENT),
    new_code_cell("%%chat\nWhich region sold the most?"),
    new_markdown_cell("The server now runs; its tools' names, descriptions and schemas are "
                      "its own:"),
    new_code_cell(SERVERS),
    new_markdown_cell("The tools' schemas take room in the window like any tool's:"),
    new_code_cell("%context"),
    new_code_cell("%%chat\nAnd atlantis?"),
    new_code_cell(FAILURE),
    new_code_cell("agent.close()  # stops the server process (also done when Python exits)"),
]


NOTEBOOKS = {"mcp.ipynb": MCP}


def write(name: str, cells: list[nbformat.NotebookNode], folder: Path = HERE) -> None:
    for index, cell in enumerate(cells):  # fixed ids: writing again changes only what changed
        cell.id = f"{Path(name).stem}-{index}"
    notebook = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(notebook, folder / name)


def main(folder: Path = HERE) -> None:
    """Write every notebook this module makes into `folder`."""
    for name, cells in NOTEBOOKS.items():
        write(name, cells, folder)


if __name__ == "__main__":
    main()
