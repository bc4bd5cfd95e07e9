"""examples/mcp.ipynb, executed top to bottom in a real kernel: the MCP server it writes
starts on the first chat, the chat calls its tools and answers from their results, the
schemas show in %context, a failing call comes back as an error, and close() stops it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.real
EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture(autouse=True)
def _no_warm_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel inherits a hosted model's name: the notebook's `%load_ext nbagent` then
    warm-starts no embedded server (the notebook chooses its own session next, and what a
    warm start does is tests/real/test_warm_start_released.py's)."""
    monkeypatch.setenv("NBAGENT_MODEL", "openai/gpt-4o-mini")


def text_of(outputs: list[dict[str, Any]]) -> str:
    parts = []
    for output in outputs:
        parts.append(output.get("text", ""))
        data = output.get("data", {})
        parts += [str(data.get(kind, "")) for kind in ("text/markdown", "text/plain")]
    return "\n".join(parts)


def test_the_mcp_example_runs_and_the_agent_uses_the_servers_tools() -> None:
    import nbformat  # here, not at collection: its schema validator takes seconds to import
    from nbclient import NotebookClient

    notebook = nbformat.read(EXAMPLES / "mcp.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(EXAMPLES)}}).execute()
    cells = [c.get("outputs", []) for c in notebook.cells if c.cell_type == "code"]
    assert not [o for outputs in cells for o in outputs if o["output_type"] == "error"]
    assert "sales" in text_of(cells[3]) and "not started" in text_of(cells[3])
    chat = text_of(cells[4])
    assert "list_regions()" in chat and "revenue(region='north')" in chat
    assert "The north region leads: north: 2,710.50 EUR." in chat
    listing = text_of(cells[5])
    assert "sales: running, 2 tools; tools: list_regions, revenue" in listing
    assert "list_regions: The sales regions, one per line." in listing
    assert "tool schemas" in text_of(cells[6])
    assert "There is no region called atlantis." in text_of(cells[7])
    assert "no region 'atlantis'; known: north, south, east, west" in text_of(cells[8])
