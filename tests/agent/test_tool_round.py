"""One round of tool calls (`_tool_round`): the same call made again and again in one turn is
run twice, steered on the third time and not run on the fourth, and the turn stops saying
why."""

from __future__ import annotations

from nbagent import tool, validate_messages
from nbagent.testing import ScriptedModel, calls
from tests import helpers
from tests.helpers import make_agent, tool_results

add = tool(helpers.add)


def test_loop_detection_steers_on_the_third_identical_call_then_stops() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1}))] * 4)
    agent, _ = make_agent(model, tools=[add])
    result = agent.chat("add forever")
    results = tool_results(agent)
    assert results[:2] == ["2", "2"] and results[2].startswith("2\n\n[nbagent: this is the third")
    assert results[3].startswith("Not run") and result.stop_reason == "loop"
    assert "called 4 times in a row" in (result.stop_message or "")
    validate_messages(agent.history.messages)
