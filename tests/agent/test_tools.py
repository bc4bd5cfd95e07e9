"""Tools from plain functions (`nbagent.agent.tools._tool`): schemas from signatures, every failure
returned to the model as text, long outputs capped on arrival and read back."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import Settings, tool
from nbagent.events import ToolFinished
from nbagent.testing import ScriptedModel, calls, reply
from tests import helpers
from tests.helpers import make_agent, tool_results

add = tool(helpers.add)


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)





def test_the_tool_schema_comes_from_the_signature_and_docstring() -> None:
    schema = add.schema["function"]
    assert schema["description"] == "Add two integers."
    assert schema["parameters"]["properties"]["a"] == {
        "description": "the first.",
        "type": "integer",
    }
    assert schema["parameters"]["required"] == ["a", "b"]


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (
            calls(("explode", {"reason": "disk full"})),
            "Error: explode raised ValueError: disk full",
        ),
        (
            calls(("add", {"a": "one", "b": 2})),
            "Error: invalid arguments for add: a: Input should be a valid integer",
        ),
        (calls(("add", {"a": 1})), "Error: invalid arguments for add: b: Field required"),
        (calls(("add", "{not json")), "Error: the arguments for add must be a JSON object"),
        (calls(("nope", {})), "Error: there is no tool named 'nope'"),
    ],
    ids=["tool-raises", "wrong-type", "missing-arg", "non-json", "unknown-tool"],
)
def test_tool_failures_go_back_to_the_model_and_the_loop_goes_on(step: Any, expected: str) -> None:
    model = ScriptedModel([step, reply("sorry, let me fix that")])
    agent, _ = make_agent(model, tools=[add, explode])
    assert agent.chat("go").text == "sorry, let me fix that"
    assert tool_results(agent)[0].startswith(expected)


def test_long_tool_output_is_capped_on_arrival_and_can_be_read_back() -> None:
    @tool
    def dump() -> str:
        """Print a lot."""
        return "\n".join(f"row {i}: " + "x" * 40 for i in range(2_000))

    model = ScriptedModel(
        [
            calls(("dump", {})),
            calls(("read_output", {"ref": "call_1", "offset": 50_000, "limit": 100})),
            reply("seen"),
        ]
    )
    agent, _ = make_agent(model, tools=[dump])
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    agent.chat("dump it")
    capped, page = tool_results(agent)
    assert len(capped) < 17_000 and 'read_output(ref="call_1"' in capped
    assert capped.startswith("row 0: ") and capped.endswith("row 1999: " + "x" * 40)
    assert page.startswith("[characters 50,000–50,100 of ") and "row " in page
    finished = [e for e in seen if isinstance(e, ToolFinished)]
    assert finished[0].full_chars > finished[0].chars


def test_builtin_notebook_tools(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    monkeypatch.chdir(tmp_path)  # the file tools read under the working directory
    frame = pd.DataFrame({"region": ["n", "s", "n"], "revenue": [1.0, 2.5, None]})
    path = tmp_path / "notes.txt"
    path.write_text("\n".join(f"line {i}" for i in range(30)))
    model = ScriptedModel(
        [
            calls(
                ("list_variables", {}),
                ("describe_variable", {"name": "sales"}),
                ("read_file", {"path": str(path), "offset": 10, "limit": 5}),
                ("python", {"code": "1"}),
            ),
            reply("done"),
        ]
    )
    agent, _ = make_agent(model, namespace={"sales": frame, "n": 3})
    agent.chat("look around")
    listing, described, page, python = tool_results(agent)
    assert listing == ("sales: DataFrame shape (3, 2); columns: region (str), revenue (float64)"
                       "\nn: int = 3")
    assert "revenue    float64" in described and "region" in described and "mean" in described
    assert page.startswith("[lines 10–15 of 30; next offset 15]\nline 10")
    assert python.startswith("Error: there is no tool named 'python'")  # off unless enabled


def test_the_python_tool_runs_in_the_namespace_when_enabled() -> None:
    namespace: dict[str, Any] = {"x": 2}
    model = ScriptedModel([calls(("python", {"code": "y = x * 21\nprint(y)"})), reply("42")])
    agent, _ = make_agent(model, namespace=namespace,
                          settings=Settings(enable_python=True))
    agent.chat("compute")
    assert tool_results(agent) == ["42\n"] and namespace["y"] == 42
    assert "python" in [t["function"]["name"] for t in model.tools_seen[0]]
