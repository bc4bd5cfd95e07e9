"""The meter line of a chat cell in a real kernel (jupyter_client, ipykernel) on the embedded
model (SmolLM2-135M on its real llama.cpp server): through a turn with a tool call its
figure never falls — the embedded model's prompt shows the tools only at a turn's first
request, so its next request counts fewer tokens, and the line once fell with it (278 →
121 → 458 tokens in one turn). What the line shows is read from the kernel's own display
messages, as JupyterLab redraws it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.helpers import execute, printed, python_kernel

pytestmark = [pytest.mark.real, pytest.mark.llama]  # the kernel starts the embedded server
jupyter_client = pytest.importorskip("jupyter_client")

SETUP = ("%load_ext nbagent\n"
         "import pandas as pd\n"
         "harvest = pd.DataFrame({'orchard': ['Alder', 'Birch', 'Cedar'],\n"
         "                        'crates': [41, 57, 38], 'grade': ['A', 'B', 'A']})")
QUESTIONS = ("Use list_variables to see what harvest holds.",  # each names a tool
             "Call list_variables again and name the orchard with most crates.")
FIGURE = re.compile(r"\) · ([\d,]+) tokens? ·")


def meter_figures(messages: list[dict[str, Any]]) -> list[int]:
    """The token figures the cell's own meter line showed, in order: its first display and
    each redraw of it (the line an earlier cell showed is put back in this cell's messages
    too: left out)."""
    line, figures = None, []
    for message in messages:
        kind = message["msg_type"]
        if kind not in ("display_data", "update_display_data"):
            continue
        shown = message["content"]
        display_id = shown.get("transient", {}).get("display_id", "")
        if not display_id.startswith("nbagent-meter-"):
            continue
        if kind == "display_data":
            line = display_id
        if display_id != line:
            continue
        found = FIGURE.search(shown["data"].get("text/plain", ""))
        assert found, shown["data"]
        figures.append(int(found.group(1).replace(",", "")))
    return figures


def test_a_chat_cells_meter_line_only_rises_through_a_turn_with_a_tool_call(
        tmp_path: Path) -> None:
    # replies of a few words: the fall was between a turn's two requests, whatever the answer
    settings = {"NBAGENT_LOCAL_N_CTX": "2048", "NBAGENT_LOCAL_MAX_TOKENS": "24"}
    with python_kernel(tmp_path, settings=settings) as (_, client):
        reply, messages = execute(client, SETUP)
        assert reply["status"] == "ok", printed(messages)
        for number, question in enumerate(QUESTIONS):
            reply, messages = execute(client, f"%%chat\n{question}", cell_id=f"chat-{number}")
            assert reply["status"] == "ok", printed(messages)
            figures = meter_figures(messages)
            assert len(figures) >= 3, figures  # shown, then redrawn as the turn went
            assert figures == sorted(figures), (question, figures)
        reply, messages = execute(
            client, "import nbagent\nhistory = nbagent.current().history\n"
                    "print(sum(bool(m.get('tool_calls')) for m in history),\n"
                    "      any(d.changed for d in nbagent.current().controller.decisions))")
        calls, compacted = printed(messages).split()
        assert int(calls) >= 2  # each turn had its tool call: the case that fell
        assert compacted == "False"  # no compaction: no fall was allowed
