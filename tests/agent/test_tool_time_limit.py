"""A tool's time limit counts the tool's own work, not the time the user spends answering
a question it asked (an approval): the user may read a question for minutes."""

from __future__ import annotations

import time

from nbagent import Agent
from nbagent.approval import ApprovalRequest
from nbagent.testing import ScriptedModel, calls, reply
from tests.helpers import tool_results


def _agent(work_s: float, answer_after_s: float) -> Agent:
    holder: dict[str, Agent] = {}

    def guarded_write() -> str:
        """Write after asking the user."""
        verdict = holder["agent"].approval.decide(ApprovalRequest(
            action="run", subject="guarded_write", source="a test", details={}, scopes=()))
        time.sleep(work_s)
        return "written" if verdict.allowed else f"refused: {verdict.reason}"

    def slow_user(question: str) -> str:
        time.sleep(answer_after_s)
        return "y"

    model = ScriptedModel([calls(("guarded_write", {})), reply("done")])
    agent = Agent(model=model, tools=[guarded_write], namespace={}, archive=False)
    agent.configure(tool_timeout_s=0.6)
    agent.approval.ask = slow_user
    holder["agent"] = agent
    return agent


def test_time_spent_answering_does_not_count_against_the_limit() -> None:
    agent = _agent(work_s=0.05, answer_after_s=1.5)  # asked for longer than the limit
    agent.chat("write it")
    assert tool_results(agent) == ["written"]


def test_the_tools_own_work_still_does() -> None:
    agent = _agent(work_s=2.0, answer_after_s=0.0)
    agent.chat("write it")
    [result] = tool_results(agent)
    assert "did not finish within 0.6 s" in result
