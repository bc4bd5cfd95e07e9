"""Tools from plain functions (`nbagent.agent.tools._tool`): schemas from signatures, every failure
returned to the model as text, long outputs capped on arrival and read back, and a tool's time
limit that counts the tool's own work, not the time the user spends answering a question it
asked (an approval): the user may read a question for minutes."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from nbagent import Agent, tool
from nbagent.agent.tools import OutputStore, run_tool
from nbagent.approval import ApprovalRequest
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


class ToolsOwnStop(BaseException):
    """A BaseException subclass of a tool's own (not an Exception)."""


class StrRaises:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __str__(self) -> str:
        raise self.error

    __repr__ = __str__


def run(function: Any, timeout: float | None = 5.0) -> tuple[str, bool, int]:
    made = tool(function)
    return run_tool({made.name: made}, made.name, "{}", call_id="c1", store=OutputStore(),
                    default_cap=16_000, timeout=timeout)


@pytest.mark.parametrize(("error", "expected"), [
    (asyncio.CancelledError("stopped"), "Error: broken raised CancelledError: stopped"),
    (ToolsOwnStop("halt"), "Error: broken raised ToolsOwnStop: halt"),
    (TimeoutError("the database did not answer"),
     "Error: broken raised TimeoutError: the database did not answer"),
    (LookupError("gone"), "Error: broken raised LookupError: gone"),
    (RuntimeError(), "Error: broken raised RuntimeError"),
], ids=["cancelled", "own-base-exception", "own-timeout", "lookup-error", "no-message"])
def test_whatever_a_tool_raises_becomes_an_error_result(error: BaseException,
                                                       expected: str) -> None:
    def broken() -> str:
        """Fails."""
        raise error

    text, ok, full = run(broken)
    assert (text, ok, full) == (expected, False, 0)
    assert "abandoned" not in text


@pytest.mark.parametrize("error", [KeyError("k"), asyncio.CancelledError(), ToolsOwnStop("x"),
                                   SystemExit(3), RuntimeError("no str")],
                         ids=["key-error", "cancelled", "own-base-exception", "system-exit",
                              "runtime-error"])
def test_a_returned_value_whose_str_raises_becomes_an_error_result(error: BaseException) -> None:
    def odd() -> Any:
        """Returns something that cannot be shown."""
        return StrRaises(error)

    text, ok, _ = run(odd)
    assert not ok and text.startswith(
        f"Error: odd returned a StrRaises that cannot be shown as text ({type(error).__name__}")


def test_an_interrupt_in_a_tool_or_its_value_still_ends_the_turn() -> None:
    stop = KeyboardInterrupt()

    def interrupted() -> str:
        """The user pressed stop."""
        raise stop

    def unshowable() -> Any:
        """Its value is interrupted while it is shown."""
        return StrRaises(stop)

    for function in (interrupted, unshowable):
        with pytest.raises(KeyboardInterrupt):
            run(function)


def test_a_generator_closed_inside_a_tool_ends_only_the_tool() -> None:
    def closing() -> str:
        """A generator inside was closed and let it escape."""
        raise GeneratorExit

    text, ok, _ = run(closing)
    assert not ok and text.startswith("Error: closing raised GeneratorExit")


def test_only_the_runner_s_own_timeout_says_abandoned() -> None:
    import threading

    release = threading.Event()

    def stuck() -> str:
        """Never finishes in time."""
        release.wait(10)
        return "late"

    try:
        text, ok, _ = run(stuck, timeout=0.05)
    finally:
        release.set()
    assert not ok and text == "Error: stuck did not finish within 0.05 s and was abandoned."


def test_a_tool_whose_value_cannot_be_shown_does_not_end_the_chat() -> None:
    @tool
    def cancelling() -> Any:
        """Returns a value whose str raises CancelledError."""
        return StrRaises(asyncio.CancelledError())

    @tool
    def own_stop() -> str:
        """Raises a BaseException subclass of its own."""
        raise ToolsOwnStop("halt")

    model = ScriptedModel([calls(("cancelling", {}), ("own_stop", {})), reply("still here")])
    agent, _ = make_agent(model, tools=[cancelling, own_stop])
    assert agent.chat("go").text == "still here"
    shown, stopped = tool_results(agent)
    assert shown.startswith("Error: cancelling returned a StrRaises that cannot be shown")
    assert stopped == "Error: own_stop raised ToolsOwnStop: halt"


# -- the time limit counts the tool's own work ------------------------------------------------


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
