"""Whatever lands between "a run is decided" and "its result is recorded" — the user's
interrupt (the turn's stop raised in the run's thread), or a display hook that raises — the
chat cell's header of the run ends saying what became of it, the session's record agrees,
the cells to keep name only runs that ran, and the session goes on. Through a real shell
and the notebook's runner; a display stand-in acts at the Nth display of the run's header.
The kernel path: tests/notebook/test_code_runs_kernel.py."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import nbagent
from nbagent.agent.tools import code_runs
from nbagent.code import agent_cells
from nbagent.events import MessageAdded
from nbagent.testing import ScriptedModel, calls, reply
from tests.notebook.helpers import session, shown

pytestmark = pytest.mark.usefixtures("clean_namespace")


@pytest.fixture(autouse=True)
def interruptible() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in the main thread, as a kernel's own handler makes
    it: a test run started in the background (a shell's `cmd &`, nohup) inherits SIGINT
    ignored, and the interrupt these tests send would do nothing (the chat goes on)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


class AtHeader:
    """The shell's display publisher, doing `action` at the `nth` display of a run's header
    (its first drawing, then each redrawing), after or instead of publishing it."""

    def __init__(self, ip: InteractiveShell, nth: int, action: Callable[[], None],
                 before: bool = False) -> None:
        self.publisher, self.nth, self.action, self.before = ip.display_pub, nth, action, before
        self.count = 0
        self._publish = self.publisher.publish
        self.publisher.publish = self.publish  # the instance's, for this capture only

    def publish(self, data: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        if not str(data.get("text/plain", "")).startswith("agent run"):
            self._publish(data, *args, **kwargs)
            return
        self.count += 1
        if self.count == self.nth and self.before:
            self.action()
        self._publish(data, *args, **kwargs)
        if self.count == self.nth and not self.before:
            self.action()


def interrupts(agent: nbagent.Agent) -> Callable[[], None]:
    """The user's interrupt, sent from where the action is done (the run's thread) to the
    thread that chats, the way the kernel's reaches it: it returns once the turn has
    answered the call and stopped the run (so a stop raised in this thread lands here)."""
    answered = threading.Event()  # told before the session's runs are (made by the run)
    agent.events.subscribe(lambda event: answered.set() if isinstance(event, MessageAdded)
                           and event.message.get("role") == "tool" else None)

    def interrupt() -> None:
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        assert answered.wait(10)
        time.sleep(0.3)  # the stop follows the answer: it lands here, if it is raised here

    return interrupt


def raising(error: BaseException) -> Callable[[], None]:
    def display_fails() -> None:
        raise error
    return display_fails


def header(captured: Any) -> str:
    """The run's header as the cell shows it at the end: its first line."""
    (code,) = [o for o in shown(captured) if str(o.get("text/plain", "")).startswith(
        "agent run")]
    return str(code["text/plain"]).splitlines()[0]


def chat(ip: InteractiveShell, policy: str, nth: int, action: str
         ) -> tuple[nbagent.Agent, Any, dict[str, Any]]:
    namespace: dict[str, Any] = {}
    after = [] if action == "interrupt" else [reply("after")]  # an interrupted turn ends
    agent = session(ScriptedModel([calls(("run_code", {"code": "ran = 1"})), *after,
                                   calls(("run_code", {"code": "again = 2"})),
                                   reply("done")]),
                    namespace=namespace, settings=nbagent.Settings(run_code=policy))
    agent.approval.ask = lambda question: "y"
    act = interrupts(agent) if action == "interrupt" else raising(
        {"RuntimeError": RuntimeError("display hook"), "KeyboardInterrupt": KeyboardInterrupt(),
         "SystemExit": SystemExit(2)}[action])
    with capture_output() as captured:
        AtHeader(ip, nth, act, before=action != "interrupt")
        if action == "interrupt":
            with pytest.raises(KeyboardInterrupt):
                agent.chat("go")
        else:
            agent.chat("go")
    return agent, captured, namespace


def goes_on(ip: InteractiveShell, agent: nbagent.Agent, namespace: dict[str, Any]) -> None:
    """The history is valid, and the next run is numbered next to the one shown."""
    assert not agent.history.pending_tool_calls
    with capture_output() as captured:
        agent.chat("again")
    assert namespace["again"] == 2 and header(captured).startswith("agent run 2 · ran in")
    assert [r.number for r in code_runs(agent.events).done] == [1, 2]


# (policy, which display of the header, what happens there, how the header ends)
STOPS = {
    # the header's first drawing, before the routing and the code (issue 40 item 5, 1)
    "auto-drawing": ("auto", 1, "not run: interrupted"),
    # the question's header, while the question is put
    "ask-question": ("ask", 1, "not run: interrupted"),
    # the answer "y" said on the header, before the run started (item 5, 2)
    "ask-allowed": ("ask", 2, "not run: interrupted"),
}


@pytest.mark.parametrize("where", STOPS)
def test_an_interrupt_before_the_code_leaves_it_not_run_and_said(
        ip: InteractiveShell, where: str) -> None:
    policy, nth, said = STOPS[where]
    agent, captured, namespace = chat(ip, policy, nth, "interrupt")
    assert "ran" not in namespace
    assert header(captured) == f"agent run 1 · {said}"
    assert [(r.number, r.status) for r in code_runs(agent.events).done] == [(1, "not run")]
    assert agent_cells(agent) == ""
    goes_on(ip, agent, namespace)
    assert agent_cells(agent) == "# agent run 2 (ok)\nagain = 2"


@pytest.mark.parametrize("error", ["RuntimeError", "KeyboardInterrupt", "SystemExit"])
def test_a_display_that_raises_at_the_header_leaves_the_run_not_run_and_said(
        ip: InteractiveShell, error: str) -> None:
    agent, captured, namespace = chat(ip, "auto", 1, error)
    assert "ran" not in namespace
    why = "interrupted" if error == "KeyboardInterrupt" else f"showing it failed ({error})"
    assert header(captured) == f"agent run 1 · not run: {why}"
    assert [(r.number, r.status) for r in code_runs(agent.events).done] == [(1, "not run")]
    (result,) = [m["content"] for m in agent.history.messages if m["role"] == "tool"]
    assert result.startswith("[agent run 1 was not run")
    assert agent.history.messages[-1]["content"] == "after" and agent_cells(agent) == ""
    goes_on(ip, agent, namespace)


def test_a_display_that_raises_after_the_code_ran_leaves_its_true_outcome(
        ip: InteractiveShell) -> None:
    agent, captured, namespace = chat(ip, "auto", 2, "RuntimeError")
    assert namespace["ran"] == 1
    assert header(captured).startswith("agent run 1 · ran in ")
    assert header(captured).endswith(" · not all shown: showing it failed (RuntimeError)")
    assert [(r.number, r.status) for r in code_runs(agent.events).done] == [(1, "ok")]
    assert agent_cells(agent) == "# agent run 1 (ok)\nran = 1"
    goes_on(ip, agent, namespace)


def test_a_question_whose_code_could_not_be_shown_shows_it_itself(ip: InteractiveShell) -> None:
    """The header the question points up at could not be drawn (a display hook raised):
    the question shows the code whole instead, and the run goes on as answered."""
    questions: list[str] = []
    namespace: dict[str, Any] = {}
    agent = session(ScriptedModel([calls(("run_code", {"code": "ran = 1"})), reply("after")]),
                    namespace=namespace, settings=nbagent.Settings(run_code="ask"))
    agent.approval.ask = lambda question: questions.append(question) or "y"
    with capture_output() as captured:
        AtHeader(ip, 1, raising(RuntimeError("display hook")), before=True)
        agent.chat("go")
    (question,) = questions
    assert "ran = 1" in question and "above" not in question
    assert namespace["ran"] == 1 and header(captured).startswith("agent run 1 · ran in ")
    assert [(r.number, r.status) for r in code_runs(agent.events).done] == [(1, "ok")]
