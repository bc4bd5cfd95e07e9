"""The run_code tool through a real agent turn (ScriptedModel drives the calls): the policy
(ask, auto, off; nobody to ask), the text the model reads (printed head and tail, the last
value, the traceback), sys.exit and errors ending only the run, the archive's code_run
records, a timed-out run stopped in its thread, and the runs as one cell
(`nbagent.agent.tools._run_code`). Running one piece of code: test_code_exec; the plain
runner outside a notebook: test_code_runner."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, Settings
from nbagent.agent.tools import AS_CELL, DECLINED, NO_ONE, OFF, code_runs, runs_as_cells
from nbagent.approval import Approval, NoOneToAsk, Verdict
from nbagent.code import PlainRunner, agent_cells, use_code_runner
from nbagent.testing import ScriptedModel, calls, reply


def turn(code: str, *, run_code: str = "auto", namespace: dict[str, Any] | None = None,
         data: Path | None = None, ask: Any = None, **settings: Any) -> tuple[Agent, str]:
    """One chat whose model runs `code` once: the agent and the tool result it read. `ask`
    answers the agent's question (the user at the input box)."""
    model = ScriptedModel([calls(("run_code", {"code": code, "explanation": "why"})),
                           reply("done")])
    agent = Agent(model=model, namespace=namespace if namespace is not None else {},
                  archive=data is not None,
                  settings=Settings(run_code=run_code, data_dir=str(data) if data else None,
                                    **settings))
    if ask is not None:
        agent.approval.ask = ask
    agent.chat("go")
    model.assert_consumed()
    (result,) = [m["content"] for m in agent.history.messages if m["role"] == "tool"]
    return agent, result


class Answers(PlainRunner):
    """The plain runner with the user's answers typed at the one question (no terminal in
    a test): each is what the user types, None where no one can answer."""

    def __init__(self, *typed: str | None) -> None:
        self.typed = list(typed)
        self.asked: list[str] = []
        self.questions: list[str] = []

    def ask(self, code: str, explanation: str, label: str, decide: Any) -> Any:
        self.asked.append(code)
        return super().ask(code, explanation, label, decide)

    def answer(self, question: str) -> str:
        self.questions.append(question)
        typed = self.typed.pop(0)
        if typed is None:
            raise NoOneToAsk("batch")
        return typed


@pytest.fixture(autouse=True)
def plain_runner() -> Any:
    """The plain runner, whatever an earlier test (a loaded notebook extension) installed."""
    previous = use_code_runner(None)
    yield
    use_code_runner(previous)


@pytest.fixture
def answering() -> Any:
    """Installs a runner whose `answer` types the given answers at the question."""

    def use(*typed: str | None) -> Answers:
        runner = Answers(*typed)
        use_code_runner(runner)
        return runner

    yield use


def test_auto_runs_in_the_namespace_and_the_model_reads_print_value_and_state() -> None:
    namespace: dict[str, Any] = {"x": 2}
    _, text = turn("y = x * 21\nprint('y is', y)\ny + 1", namespace=namespace)
    assert namespace["y"] == 42
    assert "printed" in text and "y is 42" in text
    assert "output 1:\n43" in text
    assert text.startswith("[agent run 1 ran in")


def test_an_error_is_the_runs_outcome_with_the_failing_line() -> None:
    _, text = turn("a = 1\nb = a / 0\n")
    assert "raised ZeroDivisionError" in text
    assert "b = a / 0" in text and "ZeroDivisionError: division by zero" in text
    assert "_code_exec" not in text  # the runner's own frames are not the model's business


def test_sys_exit_ends_only_the_run_and_the_chat_goes_on() -> None:
    agent, text = turn("import sys\nprint('before')\nsys.exit(3)")
    assert "called sys.exit" in text and "before" in text and "SystemExit: 3" in text
    assert agent.history.messages[-1] == {"role": "assistant", "content": "done"}


def test_a_flood_of_printing_keeps_head_and_tail_only() -> None:
    _, text = turn("for i in range(200_000):\n    print('line', i)")
    assert "line 0\n" in text and "line 199999" in text
    assert "characters not kept" in text
    assert len(text) < 40_000  # the head and tail, not the ~2.3 MB printed


def test_off_refuses_and_offers_no_tool() -> None:
    agent = Agent(model=ScriptedModel(), namespace={}, archive=False,
                  settings={"run_code": "off"})
    assert "run_code" not in agent.tools
    agent.configure(run_code="ask")
    offered = agent.tools["run_code"]
    agent.configure(run_code="off")  # turned off mid-session: gone, and a kept one refuses
    assert "run_code" not in agent.tools
    namespace_before = dict(agent.namespace)
    assert offered(code="x = 1") == OFF and agent.namespace == namespace_before


def test_ask_runs_when_the_user_says_yes(answering: Any) -> None:
    runner = answering("y")
    namespace: dict[str, Any] = {}
    _, text = turn("z = 5", run_code="ask", namespace=namespace, ask=runner.answer)
    assert runner.asked == ["z = 5"] and namespace["z"] == 5 and "ran in" in text
    assert runner.questions[0].startswith("nbagent: the model wants to run this code "
                                          "(agent run 1: why):\nz = 5\n")


@pytest.mark.parametrize(("typed", "expected"), [
    (("n",), DECLINED), ((None,), NO_ONE),
    (("", "", ""), "Not run: this code (agent run 1: why) was not run: the user gave no "
                   "answer nbagent understood in 3 tries."),
    (("", "\n", "ok"), None)], ids=["declined", "no-one-to-ask", "stray-enters", "unclear"])
def test_ask_refusals_run_nothing(answering: Any, typed: tuple[str | None, ...],
                                  expected: str | None) -> None:
    runner = answering(*typed)
    namespace: dict[str, Any] = {}
    _, text = turn("z = 5", run_code="ask", namespace=namespace, ask=runner.answer)
    assert "z" not in namespace and (expected is None or text == expected), text
    assert text.startswith("Not run")


def test_an_empty_answer_asks_again_and_runs_nothing_until_answered(answering: Any) -> None:
    runner = answering("", "y")  # a stray Enter in the focused input box, then "y"
    namespace: dict[str, Any] = {}
    _, text = turn("z = 5", run_code="ask", namespace=namespace, ask=runner.answer)
    assert len(runner.questions) == 2 and namespace["z"] == 5
    assert runner.questions[1].startswith("nbagent: an empty answer is not one of the "
                                          "answers — nothing ran.")


def test_always_for_all_code_is_a_scope_listed_and_revoked(answering: Any) -> None:
    runner = answering("a", "n")
    model = ScriptedModel([calls(("run_code", {"code": "a = 1"})),
                           calls(("run_code", {"code": "b = 2"})), reply("done"),
                           calls(("run_code", {"code": "c = 3"})), reply("declined")])
    namespace: dict[str, Any] = {}
    agent = Agent(model=model, namespace=namespace, archive=False)  # the default: ask
    agent.approval.ask = runner.answer
    agent.chat("go")
    assert (namespace["a"], namespace["b"], len(runner.questions)) == (1, 2, 1)  # asked once
    assert agent.approval.allowed() == [("code",)]
    assert agent.approval.revoke("code") == [("code",)]
    agent.chat("again")
    assert len(runner.questions) == 2 and "c" not in namespace  # asked again: declined


def test_ask_cell_proposes_the_code_below_unrun(answering: Any) -> None:
    runner = answering("c")
    namespace: dict[str, Any] = {}
    model = ScriptedModel([calls(("run_code", {"code": "z = 5", "explanation": "set z"})),
                           reply("Run the cell below.")])
    agent = Agent(model=model, namespace=namespace, archive=False)  # the default: ask
    agent.approval.ask = runner.answer
    proposed: list[str] = []
    agent.events.subscribe(lambda e: proposed.append(e.code) if hasattr(e, "code") and
                           type(e).__name__ == "CellProposed" else None)
    result = agent.chat("go")
    assert proposed == ["# set z\nz = 5"] and "z" not in namespace
    assert any(m.get("content") == AS_CELL for m in agent.history.messages)
    # the turn ends with the hand-over, whatever the model would have said next
    assert result.stop_reason == "handed_over" and len(model.requests) == 1
    assert "new cell below" in str(result.stop_message)


WIDENING = {
    "policy": "agent.configure(run_code='auto')",
    "allowance": "agent.approval.allow('code')",
    "ask": "agent.approval.ask = lambda question: 'y'",
    "approval": "agent.toolbox.approval = Approval(ask=lambda question: 'y')",
    "environment": "os.environ['NBAGENT_RUN_CODE'] = 'auto'",
    "runner": "use_code_runner(Yes())",
    "python-tool": "agent.configure(enable_python=True)",
    "mcp-config": "agent.configure(mcp_config='servers-that-always-allow.json')",
}


@pytest.mark.parametrize("widen", list(WIDENING.values()), ids=list(WIDENING))
def test_a_run_cannot_widen_its_own_approval(
        answering: Any, widen: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_RUN_CODE", raising=False)
    runner = answering("y", "n")

    class Yes(PlainRunner):
        def ask(self, code: str, explanation: str, label: str, decide: Any) -> Any:
            return Verdict(True, outcome="y")

    namespace: dict[str, Any] = {"os": os, "Approval": Approval, "Yes": Yes,
                                 "use_code_runner": use_code_runner}
    model = ScriptedModel([calls(("run_code", {"code": widen})), reply("widened"),
                           calls(("run_code", {"code": "later = 1"})), reply("declined")])
    agent = Agent(model=model, namespace=namespace, archive=False)  # env settings: ask
    agent.approval.ask = runner.answer
    namespace["agent"] = agent
    lines: list[str] = []
    runner.tell = lines.append  # type: ignore[method-assign]
    agent.chat("go")
    (said,) = lines
    assert said.startswith("agent run 1 changed how you are asked (") and "undone" in said
    assert said in agent.history.messages[-2]["content"]  # the model reads it too
    assert agent.settings().run_code == "ask" and agent.approval.allowed() == []
    assert agent.approval.ask == runner.answer and "python" not in agent.tools
    agent.chat("again")
    assert len(runner.questions) == 2 and "later" not in namespace  # asked again: "n"


NEW_SESSION = {
    "new-session": "nbagent.new_session(settings={'run_code': 'auto'})",
    "set-current": "nbagent.set_current(nbagent.Agent(settings={'run_code': 'auto'}))",
    "allowed": "nbagent.new_session().approval.allow('code')",
    "asked-yes": "nbagent.new_session().approval.ask = lambda question: 'y'",
}


@pytest.mark.parametrize("widen", list(NEW_SESSION.values()), ids=list(NEW_SESSION))
def test_a_run_cannot_start_a_session_that_asks_less(
        answering: Any, widen: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import nbagent

    monkeypatch.delenv("NBAGENT_RUN_CODE", raising=False)
    monkeypatch.setenv("NBAGENT_DATA_DIR", str(tmp_path))
    runner = answering("y", "n")
    namespace: dict[str, Any] = {"nbagent": nbagent}
    model = ScriptedModel([calls(("run_code", {"code": widen})), reply("widened"),
                           calls(("run_code", {"code": "later = 1"})), reply("declined")])
    agent = nbagent.set_current(Agent(model=model, namespace=namespace, archive=False))
    agent.approval.ask = runner.answer
    lines: list[str] = []
    runner.tell = lines.append  # type: ignore[method-assign]
    try:
        agent.chat("go")
        (said,) = lines
        assert said.startswith("agent run 1 changed how you are asked (its new session") \
            and "undone" in said
        successor = nbagent.current()
        assert successor is not agent  # the session the user approved starting stays
        assert successor.settings().run_code == "ask" and successor.approval.allowed() == []
        assert successor.approval.ask == runner.answer
        successor.model = model
        successor.chat("again")  # the next chat talks to it, and it asks: "n"
        assert len(runner.questions) == 2 and "later" not in namespace
    finally:
        nbagent.current().close()
        nbagent.set_current(None)


def test_a_run_that_leaves_approval_alone_says_nothing(answering: Any) -> None:
    runner = answering("y")
    lines: list[str] = []
    runner.tell = lines.append  # type: ignore[method-assign]
    _, text = turn("agent_settings_untouched = True", run_code="ask", ask=runner.answer)
    assert lines == [] and "undone" not in text


def test_every_run_is_archived_with_code_outcome_and_outputs(tmp_path: Path) -> None:
    agent, _ = turn("print('hello')\n1/0", data=tmp_path)
    path = agent.session.archive.path
    records = [json.loads(line) for line in Path(path).read_text().splitlines()]
    (run,) = [r for r in records if r["kind"] == "code_run"]
    assert run["code"] == "print('hello')\n1/0" and run["status"] == "error"
    assert "hello" in run["text"] and run["number"] == 1
    agent.close()
    resumed = Agent.resume(agent.session_id, model=ScriptedModel(
        [calls(("run_code", {"code": "2 + 2"})), reply("4")]),
        settings={"data_dir": str(tmp_path), "run_code": "auto"})
    assert len(resumed.history) == len(agent.history)  # the record replays as nothing
    resumed.chat("again")
    assert "[agent run 2 ran in" in resumed.history.messages[-2]["content"]  # numbered on
    assert agent_cells(resumed) == ("# agent run 1 (error)\nprint('hello')\n1/0\n\n"
                                    "# agent run 2 (ok)\n2 + 2")  # from before the restart too
    resumed.close()


def test_the_runs_become_one_cell_to_keep() -> None:
    model = ScriptedModel([calls(("run_code", {"code": "a = 1"})),
                           calls(("run_code", {"code": "1/0"})), reply("done")])
    agent = Agent(model=model, namespace={}, archive=False, settings={"run_code": "auto"})
    agent.chat("go")
    assert runs_as_cells(agent.events) == ("# agent run 1 (ok)\na = 1\n\n"
                                           "# agent run 2 (error)\n1/0")


def test_a_run_past_the_tool_timeout_is_stopped_in_its_thread() -> None:
    namespace: dict[str, Any] = {"ticks": 0}
    code = "import time\nwhile True:\n    ticks += 1\n    time.sleep(0.01)"
    agent, text = turn(code, namespace=namespace, tool_timeout_s=0.5)
    assert "did not finish" in text
    runs = code_runs(agent.events)
    deadline = time.monotonic() + 10
    while not runs.done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r.status for r in runs.done] == ["interrupted"]
    stopped_at = namespace["ticks"]
    time.sleep(0.2)
    assert namespace["ticks"] == stopped_at  # nothing keeps running unseen
    assert not [t for t in threading.enumerate() if t.name.startswith("nbagent-run_code")]


def test_a_secret_the_code_prints_is_redacted_before_the_model_reads_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 3
    monkeypatch.setenv("OPENAI_API_KEY", key)
    _, text = turn("import os\nprint(os.environ['OPENAI_API_KEY'])")
    assert key not in text and "[redacted]" in text




STUBBORN = """import time
beats = 0
while not stop_now:
    try:
        time.sleep(0.02)
        beats += 1
        print('beat', beats)
    except KeyboardInterrupt:
        print('ignored the interrupt')
"""


def test_a_run_that_will_not_stop_is_cut_loose_and_prints_nothing_into_later_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, Any] = {"stop_now": False}
    stream = sys.stdout
    try:
        agent, text = turn(STUBBORN, namespace=namespace, tool_timeout_s=0.5, data=tmp_path)
        assert "did not finish" in text
        runs = code_runs(agent.events)
        deadline = time.monotonic() + 20
        while not runs.done and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [(r.number, r.status) for r in runs.done] == [(1, "detached")]
        capsys.readouterr()
        print("the user's own cell prints here")  # the run goes on in its thread meanwhile
        time.sleep(0.3)
        assert namespace["beats"] > 0
        later = capsys.readouterr().out
        assert later == "the user's own cell prints here\n"  # nothing of the run's, all ours
        assert "agent run 1 (detached" in agent_cells(agent)
    finally:
        namespace["stop_now"] = True  # it ends by itself, later: recorded as such
    while len(runs.done) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(r.status, r.detached) for r in runs.done] == [("detached", True), ("ok", True)]
    assert agent_cells(agent) == "# agent run 1 (detached, then ok)\n" + STUBBORN.rstrip("\n")
    assert sys.stdout is stream  # nothing of the run's is left in place
    agent.close()


def test_numbers_are_taken_once_across_declines_and_resumes(
        answering: Any, tmp_path: Path) -> None:
    runner = answering("n", "y", "y")
    model = ScriptedModel([calls(("run_code", {"code": "a = 1"})), reply("declined"),
                           calls(("run_code", {"code": "b = 2"})), reply("ran")])
    agent = Agent(model=model, namespace={}, settings=Settings(data_dir=str(tmp_path)))
    agent.approval.ask = runner.answer
    agent.chat("first")
    agent.chat("second")
    results = [m["content"] for m in agent.history.messages if m["role"] == "tool"]
    assert results[0] == DECLINED and results[1].startswith("[agent run 2 ran in")
    assert agent_cells(agent) == "# agent run 2 (ok)\nb = 2"  # the declined one never ran
    agent.close()
    resumed = Agent.resume(agent.session_id, model=ScriptedModel(
        [calls(("run_code", {"code": "c = 3"})), reply("again")]),
        settings={"data_dir": str(tmp_path)})
    resumed.approval.ask = runner.answer
    resumed.chat("third")
    assert resumed.history.messages[-2]["content"].startswith("[agent run 3 ran in")
    resumed.close()


KILLER = """
import sys
from nbagent import Agent, Settings
from nbagent.testing import ScriptedModel, calls, reply
model = ScriptedModel([calls(("run_code", {"code": "import os\\nprint('bye')\\nos._exit(3)"})),
                       reply("never")])
agent = Agent(model=model, namespace={}, settings=Settings(data_dir=sys.argv[1],
                                                          run_code="auto"))
print(agent.session_id, flush=True)
agent.chat("end it")
"""


def test_a_run_that_ends_the_process_is_in_the_cells_after_a_restart(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run([sys.executable, "-c", KILLER, str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 3, done.stderr  # the run ended the process
    session_id = done.stdout.split()[0]
    resumed = Agent.resume(session_id, model=ScriptedModel(),
                           settings={"data_dir": str(tmp_path)})
    assert agent_cells(resumed) == ("# agent run 1 (never ended: the kernel stopped or "
                                    "restarted during it)\nimport os\nprint('bye')\nos._exit(3)")
    resumed.close()


def test_the_plain_runner_tells_the_model_the_user_saw_no_output() -> None:
    _, text = turn("print('hello')")
    assert text.startswith("[agent run 1 ran in") and "the user was not shown" in text
    assert "in the notebook" not in text


def test_the_older_python_tool_cannot_widen_approval_either() -> None:
    model = ScriptedModel([calls(("python", {"code": "agent.configure(run_code='auto')"})),
                           reply("done")])
    namespace: dict[str, Any] = {}
    agent = Agent(model=model, namespace=namespace, archive=False,
                  settings={"enable_python": True, "run_code": "ask"})
    namespace["agent"] = agent
    agent.chat("go")
    assert agent.settings().run_code == "ask"
    assert "the python tool's code changed how you are asked (run_code 'ask' → 'auto')" in \
        agent.history.messages[-2]["content"]


class Told(PlainRunner):
    """The plain runner, keeping the lines it tells instead of warning them."""

    def __init__(self) -> None:
        self.told: list[str] = []

    def tell(self, text: str) -> None:
        self.told.append(text)


def test_a_run_whose_call_ended_before_it_started_never_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn's stop finds no run going on while the tool's thread is still on its way
    to the code (slow to start, here the archive's numbering): that thread must not run
    it afterwards, unseen and with no one to stop it."""
    from nbagent.agent.tools import CodeRuns

    slow = CodeRuns.continue_from

    def late(self: CodeRuns, archive: Any) -> None:
        time.sleep(0.6)
        slow(self, archive)

    monkeypatch.setattr(CodeRuns, "continue_from", late)
    namespace: dict[str, Any] = {}
    agent, text = turn("ran = True", namespace=namespace, tool_timeout_s=0.2)
    assert "did not finish" in text
    runs = code_runs(agent.events)
    time.sleep(1.0)  # the thread reached the code's start and went no further
    assert "ran" not in namespace
    assert runs.done == [] and runs.taken == 0  # never shown, so never numbered
    assert agent_cells(agent) == ""


def test_the_runs_shown_are_numbered_without_gaps_in_the_cell_and_the_archive(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A run the turn left before anything of it was shown takes no number: the next run
    shown is "agent run 1", and the archive's runs (`%nbagent cells`) say the same (it was
    "agent run 2" after nothing)."""
    from nbagent.agent.tools import CodeRuns

    slow, calls_made = CodeRuns.continue_from, []

    def late_once(self: CodeRuns, archive: Any) -> None:
        if not calls_made:
            calls_made.append(True)
            time.sleep(0.6)
        slow(self, archive)

    monkeypatch.setattr(CodeRuns, "continue_from", late_once)
    namespace: dict[str, Any] = {}
    model = ScriptedModel([calls(("run_code", {"code": "first = 1"})), reply("gone"),
                           calls(("run_code", {"code": "second = 2"})), reply("done")])
    agent = Agent(model=model, namespace=namespace, archive=True, settings=Settings(
        run_code="auto", data_dir=str(tmp_path), tool_timeout_s=0.2))
    agent.chat("go")
    time.sleep(1.0)  # the first call's thread reached the code's start and went no further
    agent.chat("again")
    results = [m["content"] for m in agent.history.messages if m["role"] == "tool"]
    assert "did not finish" in results[0] and results[1].startswith("[agent run 1 ran in")
    assert "first" not in namespace and namespace["second"] == 2
    assert agent_cells(agent) == "# agent run 1 (ok)\nsecond = 2"
    assert [(r.number, r.status) for r in code_runs(agent.events).done] == [(1, "ok")]


def test_a_stop_that_lands_before_the_code_ran_records_it_not_run_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn's stop (an interrupt raised in the run's thread) landing after the run was
    announced to the archive but before its code ran: not run, and the user told which."""
    from nbagent.agent.tools import CodeRuns

    announce = CodeRuns.starting

    def stopped(self: CodeRuns, number: int, code: str) -> None:
        announce(self, number, code)
        raise KeyboardInterrupt  # as `CodeRuns.stop` raises it, here

    monkeypatch.setattr(CodeRuns, "starting", stopped)
    runner = Told()
    use_code_runner(runner)
    namespace: dict[str, Any] = {}
    model = ScriptedModel([calls(("run_code", {"code": "ran = True"})), reply("after")])
    agent = Agent(model=model, namespace=namespace, archive=False, settings={"run_code": "auto"})
    with pytest.raises(KeyboardInterrupt):
        agent.chat("go")
    assert "ran" not in namespace
    assert [r.status for r in code_runs(agent.events).done] == ["not run"]
    assert runner.told == ["agent run 1 · not run: interrupted"]
    assert agent_cells(agent) == ""  # not "agent run 1 (interrupted)": it never ran
    assert agent.history.messages[-1]["role"] == "tool"  # the call answered
    assert not agent.history.pending_tool_calls
    agent.chat("again")
    assert agent.history.messages[-1]["content"] == "after"
