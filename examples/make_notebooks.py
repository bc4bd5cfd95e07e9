"""Writes the example notebooks (run it after editing a cell here; tests execute them)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent
STAND_IN = """import nbagent
from nbagent.testing import offline_analyst

# No API key needed here: a rule-following stand-in plays the model, so every cell
# runs anywhere. With a real model: nbagent.new_session(model="anthropic/claude-sonnet-4-20250514")
agent = nbagent.new_session(model=offline_analyst())"""
QUICK_STAND_IN = STAND_IN.replace(
    "agent = nbagent.new_session(model=offline_analyst())",
    "# The stand-in gets a small local model's window, so the meter has something to show.\n"
    "small = nbagent.Settings(max_context_tokens=8192)\n"
    "agent = nbagent.new_session(model=offline_analyst(), settings=small)",
)

QUICKSTART = [
    new_markdown_cell(
        "# nbagent quickstart\n\nChat with a tool-using agent in cells, watch "
        "the context meter, compact on demand."
    ),
    new_code_cell("%load_ext nbagent"),
    new_code_cell("""import pandas as pd

sales = pd.DataFrame({
    "region": ["north", "south", "east", "west", "north", "south"],
    "month": ["2026-01", "2026-01", "2026-02", "2026-02", "2026-03", "2026-03"],
    "revenue": [1200.5, 980.0, 1430.25, None, 1510.0, 1105.75],
    "units_sold": [120, 95, 143, 88, 151, 110],
})"""),
    new_code_cell(QUICK_STAND_IN),
    new_markdown_cell("Each chat cell ends with the context meter, live round by round; once "
                      "the next chat starts it keeps the numbers of its own turn, so the saved "
                      "notebook reads as a record (`%nbagent meter` shows the full widget, "
                      "always live)."),
    new_code_cell("%%chat\nWhat data do I have?"),
    new_code_cell("%%chat\nDescribe every table, please."),
    new_markdown_cell("Compact on demand; the focus tells the summary what to keep."),
    new_code_cell("%compact keep the exact column names"),
    new_code_cell("%context"),
    new_code_cell("""state = agent.context_state()
print(f"{state.percent_left:.0f}% context left, level {state.level}")
limits = state.thresholds  # the percentage is of state.base: the auto-compact trigger here
print(f"auto-compact at {state.base:,} · effective window {limits.effective_window:,} · "
      f"window {limits.context_window:,} (from {state.window_source})")"""),
]

LONG_SESSION = [
    new_markdown_cell(
        "# A long session\n\nA small window (4,096 tokens) fills fast: watch "
        "nbagent compact at the turn boundary and between tool rounds."
    ),
    new_code_cell("%load_ext nbagent"),
    new_code_cell("""import numpy as np
import pandas as pd

rng = np.random.default_rng(7)
for name in ["orders", "customers", "returns", "inventory", "shipments"]:
    globals()[name] = pd.DataFrame(rng.normal(size=(40, 8)).round(3),
                                   columns=[f"{name}_{c}" for c in "abcdefgh"])"""),
    new_code_cell(STAND_IN),
    new_code_cell("""# This session only: a small window, and only the newest round's tool results
# kept verbatim mid-loop.
%nbagent window=4096 keep_recent_turns=1"""),
    new_code_cell("%%chat\nDescribe every table."),
    new_code_cell("""from nbagent.widgets import MeterLine

for i in range(6):
    agent.chat(f"Question {i}: describe every table again, please?")

ran = [d for d in agent.controller.decisions if d.action == "compacted"]
for d in ran:
    levels = " → ".join(d.levels)
    print(f"{d.trigger:>8}: {levels}  {d.tokens_before:,} → {d.tokens_after:,} tokens")
automatic = sum(d.trigger == "auto" for d in ran)
print("automatic:", automatic, "mid-loop:", sum(d.trigger == "midloop" for d in ran))

# The meter of these chats, here; the chat cell above keeps the meter of its own turn.
MeterLine.follow(agent)"""),
    new_code_cell("%context"),
]


NOTEBOOKS = {"quickstart.ipynb": QUICKSTART, "long_session.ipynb": LONG_SESSION}


def write(name: str, cells: list[nbformat.NotebookNode], folder: Path = HERE) -> None:
    for index, cell in enumerate(cells):  # fixed ids: writing again changes only what changed
        cell.id = f"{Path(name).stem}-{index}"
    notebook = new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(notebook, folder / name)


def main(folder: Path = HERE) -> None:
    """Write every notebook this module makes into `folder`."""
    for name, cells in NOTEBOOKS.items():
        write(name, cells, folder)


if __name__ == "__main__":
    main()
