"""Tool schemas sized to the window (`agent/_tool_sizes`): in full while they fit 15% of the
effective window, else lean (the first sentence, the arguments' types), leaner (a short
description, the required arguments), then the built-ins that are not `essential` are left
out, those that run code last. What is offered is what each request sends, and what the
session counts."""

from __future__ import annotations

import pytest

from nbagent import Agent, Settings
from nbagent.agent.tools import BUILTIN_TOOLS
from nbagent.engine import count_tools_tokens
from nbagent.testing import ScriptedModel, reply


def agent_at(window: int) -> Agent:
    return Agent(model=ScriptedModel(default=reply("ok")), archive=False, namespace={},
                 settings=Settings(max_context_tokens=window))


@pytest.mark.parametrize("window", [2_048, 4_096, 8_192, 32_768])
def test_the_schemas_take_at_most_their_share_of_the_window(window: int) -> None:
    agent = agent_at(window)
    sized = agent.sized_tools()
    effective = agent.context_state().thresholds.effective_window
    assert sized.tokens == count_tools_tokens(sized.schemas) <= 0.15 * effective
    assert sized.full_tokens == count_tools_tokens(agent.toolbox.schemas())
    assert (sized.form == "full") is (sized.full_tokens <= 0.15 * effective)
    agent.chat("hello")
    assert agent.model.tools_seen[-1] == sized.schemas  # what is sent is what is counted


def test_a_lean_schema_keeps_the_first_sentence_and_the_argument_types() -> None:
    # the first window whose share fits the lean form (a new built-in moves it: not fixed)
    lean = next(sized for window in range(4_096, 32_769, 512)
                if (sized := agent_at(window).sized_tools()).form == "lean")
    schema = next(s for s in lean.schemas if s["function"]["name"] == "describe_variable")
    assert schema == {"type": "function", "function": {
        "name": "describe_variable",
        "description": "Describe one variable: type, shape, dtypes, the first rows and "
                       "summary statistics.",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"},
                                                         "rows": {"type": "integer"}},
                       "required": ["name"]}}}


def test_at_the_smallest_windows_tools_that_run_code_are_left_out_last() -> None:
    small = agent_at(2_048).sized_tools()
    names = [s["function"]["name"] for s in small.schemas]
    assert small.form == "leaner" and "run_code" in small.left_out
    assert small.left_out.index("run_code") == len(small.left_out) - 1  # the last to go
    essential = {n for n, row in BUILTIN_TOOLS.items() if row.essential}  # the notebook's own
    assert essential and essential <= set(names)
    assert "run_code" not in agent_at(4_096).sized_tools().left_out
    full = count_tools_tokens(agent_at(2_048).toolbox.schemas())
    assert "not offered: " in small.words() and f"({full:,} in full)" in small.words()


def test_a_tool_left_out_still_runs_when_called() -> None:
    from nbagent.testing import calls

    agent = Agent(model=ScriptedModel([calls(("recall", {"query": "x"})), reply("done")]),
                  archive=False, namespace={}, settings=Settings(max_context_tokens=2_048))
    assert "recall" in agent.sized_tools().left_out
    assert agent.chat("look it up").text == "done"
    result = next(m for m in agent.history if m["role"] == "tool")
    assert "unknown tool" not in str(result["content"]).lower()
