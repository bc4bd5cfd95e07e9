"""Every example notebook, executed top to bottom in a real kernel (nbclient)."""

from __future__ import annotations

import re
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


def execute(name: str) -> list[list[dict[str, Any]]]:
    import nbformat  # here, not at collection: its schema validator takes seconds to import
    from nbclient import NotebookClient

    notebook = nbformat.read(EXAMPLES / name, as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(EXAMPLES)}},
    ).execute()
    return [cell.get("outputs", []) for cell in notebook.cells if cell.cell_type == "code"]


def text_of(outputs: list[dict[str, Any]]) -> str:
    parts = []
    for output in outputs:
        parts.append(output.get("text", ""))
        data = output.get("data", {})
        parts += [str(data.get(kind, "")) for kind in ("text/html", "text/markdown", "text/plain")]
    return "\n".join(parts)


def test_every_example_is_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.ipynb")) == [
        "long_session.ipynb",
        "mcp.ipynb",
        "quickstart.ipynb",
    ]


def test_quickstart() -> None:
    cells = execute("quickstart.ipynb")
    everything = [o for outputs in cells for o in outputs]
    assert not [o for o in everything if o["output_type"] == "error"]
    first_chat, second_chat = text_of(cells[3]), text_of(cells[4])
    assert "context left" in first_chat and "context left" in second_chat  # a meter per cell
    assert "list_variables" in first_chat and "sales: DataFrame shape (6, 4)" in first_chat
    assert "describe_variable" in second_chat and "units_sold" in second_chat
    assert "compacted (L" in text_of(cells[5])
    context = text_of(cells[6])
    assert "tool schemas" in context and "auto-compact" in context and "circuit breaker" in context
    assert re.search(r"\d+% context left, level \w+", text_of(cells[7]))


def test_long_session_compacts_automatically_and_mid_loop() -> None:
    cells = execute("long_session.ipynb")
    everything = [o for outputs in cells for o in outputs]
    assert not [o for o in everything if o["output_type"] == "error"]
    report = text_of(cells[5])
    automatic = int(re.search(r"automatic: (\d+)", report).group(1))  # type: ignore[union-attr]
    midloop = int(re.search(r"mid-loop: (\d+)", report).group(1))  # type: ignore[union-attr]
    assert automatic >= 1 and midloop >= 1
    assert re.search(r"^window\s+4,096\s+from env$", text_of(cells[6]), re.MULTILINE)
    chat, loop = text_of(cells[4]), text_of(cells[5])
    # the chat cell keeps its own turn's figures; the loop's meter is its own (compared by
    # tokens: both may read "0% left" once past the trigger)
    tokens = [re.search(r"nbagent: .*?([\d,]+) tokens ·", text).group(1)  # type: ignore[union-attr]
              for text in (chat, loop)]
    assert tokens[0] != tokens[1]
