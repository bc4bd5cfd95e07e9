"""What a tool returned, as text for the model (`nbagent.agent.tools._text`): tables
(DataFrames, Series, arrays) reach the model as bounded text tables, not JSON, and the tool
modules import neither pandas nor numpy until a tool returns one of theirs."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from nbagent import tool
from nbagent.testing import ScriptedModel, calls, reply
from tests.helpers import make_agent, tool_results


def test_tables_returned_by_a_tool_reach_the_model_as_text_tables() -> None:
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({"region": ["north", "south"] * 500, "revenue": range(1_000)})
    values = {"frame": frame, "series": frame["revenue"], "array": np.arange(12).reshape(3, 4),
              "scalar": np.int64(7)}

    @tool
    def table(kind: str) -> Any:
        """Return a table."""
        return values[kind]

    model = ScriptedModel([calls(*[("table", {"kind": kind}) for kind in values]),
                           reply("seen")])
    agent, _ = make_agent(model, tools=[table])
    agent.chat("show me")
    shown_frame, shown_series, shown_array, shown_scalar = tool_results(agent)
    assert shown_frame.startswith("DataFrame, 1,000 rows x 2 columns:\n")
    assert "\\n" not in shown_frame and not shown_frame.startswith('"')
    lines = shown_frame.splitlines()
    assert lines[1].split() == ["region", "revenue"] and lines[2].split() == ["0", "north", "0"]
    assert len(lines) < 70 and "999  south      999" in shown_frame  # head, tail, bounded
    assert shown_series.startswith("Series, 1,000 rows:\n0        0")
    assert "Name: revenue, dtype: int64" in shown_series
    assert shown_array == ("ndarray shape (3, 4) dtype int64:\n"
                           "[[ 0  1  2  3]\n [ 4  5  6  7]\n [ 8  9 10 11]]")
    assert shown_scalar == "7"
    with pytest.raises(json.JSONDecodeError):
        json.loads(shown_frame)


def test_the_tool_modules_import_neither_pandas_nor_numpy() -> None:
    code = ("import sys, nbagent.agent.tools._builtin, nbagent.agent.tools._tool; "
            "print(sorted(m for m in ('pandas', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
