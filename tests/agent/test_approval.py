"""`Approval`: scopes allowed and taken back, the answers a user gives, and every way no
one can answer (a batch kernel, EOF, no terminal) ending as a refusal, never a crash."""

from __future__ import annotations

import builtins
import io
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import StdinNotImplementedError

from nbagent import Agent, Settings
from nbagent.approval import (
    ANSWERS,
    CODE_ANSWERS,
    CODE_SCOPE,
    MAX_ASKS,
    MCP_ANSWERS,
    UNANSWERED,
    Approval,
    ApprovalRequest,
    NoOneToAsk,
    ask_with_input,
    outcome_note,
)
from nbagent.code import code_request
from nbagent.testing import ScriptedModel, calls, reply


def request(tool: str = "query", server: str = "db", **details: object) -> ApprovalRequest:
    return ApprovalRequest(action="call the MCP tool", subject=tool,
                           source=f"MCP server {server!r}", details=details or {"sql": "x"},
                           scopes=(("mcp", server, tool), ("mcp", server)))


class Answers:
    def __init__(self, *answers: str) -> None:
        self.answers: list[str] = list(answers)
        self.questions: list[str] = []

    def __call__(self, question: str) -> str:
        self.questions.append(question)
        return self.answers.pop(0)


@pytest.mark.parametrize(("answer", "allowed", "kept"), [
    ("y", True, []), ("yes", True, []), ("t", True, [("mcp", "db", "query")]),
    ("s", True, [("mcp", "db")]), ("n", False, []), ("No", False, []),
], ids=["y", "yes", "tool", "server", "n", "No"])
def test_each_answer(answer: str, allowed: bool, kept: list[tuple[str, ...]]) -> None:
    approval = Approval(Answers(answer))
    verdict = approval.decide(request())
    assert verdict.allowed is allowed and approval.allowed() == kept
    if not allowed:
        assert verdict.reason == "the user did not allow query (MCP server 'db') to run"


@pytest.mark.parametrize("unclear", ["", "  ", "maybe", "always", "ye", "c"],
                         ids=["empty", "spaces", "other", "a-word-not-offered", "prefix",
                              "cell-not-offered"])
def test_an_empty_or_unrecognised_answer_runs_nothing_and_asks_again(unclear: str) -> None:
    answers = Answers(unclear, unclear, unclear, "y")
    approval = Approval(answers)
    verdict = approval.decide(request())
    assert not verdict.allowed and verdict.outcome == "unclear" and approval.allowed() == []
    assert len(answers.questions) == MAX_ASKS
    assert "not one of the answers — nothing ran" in answers.questions[1]
    answers = Answers(unclear, "y")  # one stray Enter, then the answer meant
    assert Approval(answers).decide(request()).allowed and len(answers.questions) == 2


def test_every_answer_of_the_table_is_offered_read_and_noted_from_its_row() -> None:
    for choice in ANSWERS:
        assert choice.key in CODE_ANSWERS + MCP_ANSWERS, f"{choice.key!r} is offered nowhere"
        offering = ApprovalRequest("run", "x", "here", "x = 1", scopes=(CODE_SCOPE, ("mcp", "s")),
                                   answers=choice.key)
        assert f"[{choice.key}] {choice.says}" in offering.question()
        for typed in (choice.key, *choice.words, choice.key.upper()):
            assert offering.choose(typed) is choice
        assert outcome_note(choice.key) == choice.note
    for outcome, note in UNANSWERED.items():
        assert outcome_note(outcome) == note
    unscoped = ApprovalRequest("run", "x", "here", "", scopes=(), answers="yan")
    assert [c.key for c in unscoped.choices()] == ["y", "n"]  # no scope for "always"
    with pytest.raises(ValueError):
        ApprovalRequest("run", "x", "here", "", scopes=(CODE_SCOPE,), answers="yq")


def test_the_docs_prose_on_run_code_names_every_answer_code_is_offered() -> None:
    tools = (Path(__file__).parents[2] / "docs" / "tools.md").read_text(encoding="utf-8")
    (row,) = [line for line in tools.splitlines() if line.startswith("| `ask` (default) |")]
    missing = [key for key in CODE_ANSWERS if f"`{key}`" not in row]
    assert not missing, f"docs/tools.md's run_code table does not name {missing}"


def test_the_question_shows_what_where_and_with_what() -> None:
    answers = Answers("n")
    Approval(answers).decide(request(sql="select 1"))
    assert answers.questions[0] == (
        "nbagent: the model wants to call the MCP tool query (MCP server 'db') with:\n"
        '  {"sql": "select 1"}\nAllow? [y] yes, once · [t] always for this tool · '
        "[s] always for this server · [n] no: ")


def test_long_arguments_are_shown_whole_in_the_order_the_model_gave_them() -> None:
    answers = Answers("n")
    comment = "routine cleanup, nothing to see here " * 300  # ~11,000 characters first
    Approval(answers).decide(request(comment=comment, sql="DROP TABLE orders"))
    (question,) = answers.questions
    assert comment.strip() in question and '"sql": "DROP TABLE orders"' in question
    assert question.index('"comment"') < question.index('"sql"')  # as the server gets them


def test_hidden_characters_are_shown_where_they_stand_and_flagged() -> None:
    answers = Answers("n")
    sneaky = "ok\u2067 \u202edrop it\u200b\x1b[2K\r\x07"
    Approval(answers).decide(request(path=sneaky))
    (question,) = answers.questions
    for raw in ("\u2067", "\u202e", "\u200b", "\x1b", "\x07"):
        assert raw not in question
    assert "⟨U+2067⟩" in question and "⟨U+202E⟩" in question and "⟨U+200B⟩" in question
    warning = next(line for line in question.splitlines() if line.startswith("⚠"))
    assert warning.startswith("⚠ 3 hidden characters, shown as ⟨U+…⟩: ")  # \x1b, \r, \x07:
    assert "U+2067 RIGHT-TO-LEFT ISOLATE" in warning  # JSON writes them as \u001b escapes
    code = "x = 1\rimport os; os.remove('data.csv')  # \x1b[1A\x1b[2K"
    code_answers = Answers("n")
    Approval(code_answers).decide(code_request(code, "tidy up", "agent run 1"))
    asked = code_answers.questions[0]
    assert "x = 1⟨U+000D⟩\nimport os; os.remove('data.csv')" in asked  # the line Python reads
    assert "\x1b" not in asked and "⟨U+001B⟩[1A" in asked
    assert "U+000D CARRIAGE RETURN" in asked and "U+001B ESCAPE" in asked


def test_code_is_asked_with_its_own_answers_and_all_code_is_one_scope() -> None:
    answers = Answers("t", "a")  # "t" is not offered for code: asked again
    approval = Approval(answers)
    verdict = approval.decide(code_request("x = 1", "", "agent run 1"))
    assert verdict.allowed and verdict.outcome == "a" and approval.allowed() == [CODE_SCOPE]
    assert "[y] yes, once · [c] take it as a new cell below, unrun · [a] always for all " \
           "code in this session · [n] no" in answers.questions[0]
    assert approval.decide(code_request("y = 2", "", "agent run 2")).allowed
    assert len(answers.questions) == 2  # the second run was not asked
    assert approval.revoke("code") == [CODE_SCOPE]
    cell = Approval(Answers("c")).decide(code_request("x = 1", "", "agent run 3"))
    assert not cell.allowed and cell.outcome == "c"


def test_code_shown_elsewhere_is_pointed_at_not_repeated() -> None:
    answers = Answers("n")
    code = "\n".join(f"step_{n} = {n}" for n in range(40)) + "\u2066"
    Approval(answers).decide(code_request(code, "", "agent run 1", "above, in the chat cell"))
    (question,) = answers.questions
    assert "step_3" not in question and "(40 lines, " in question
    assert "shown whole above, in the chat cell" in question
    assert "⚠ 1 hidden character, shown as ⟨U+…⟩: U+2066 LEFT-TO-RIGHT ISOLATE" in question


def test_allowed_scopes_are_not_asked_and_revoking_takes_narrower_ones_too() -> None:
    answers = Answers()
    approval = Approval(answers, allowed=[("mcp", "db")])
    approval.allow("mcp", "db", "query")
    approval.allow("mcp", "files")
    assert approval.decide(request()).allowed and answers.questions == []
    assert sorted(approval.revoke("mcp", "db")) == [("mcp", "db"), ("mcp", "db", "query")]
    assert approval.allowed() == [("mcp", "files")]
    assert not approval.is_allowed(("mcp", "db", "query"))
    with pytest.raises(ValueError):
        approval.allow()


@pytest.mark.parametrize("failure", [EOFError(), StdinNotImplementedError("no stdin"),
                                     RuntimeError("input(): lost sys.stdin")],
                         ids=["eof", "batch-kernel", "lost-stdin"])
def test_no_one_to_answer_is_a_refusal_the_model_reads(
        monkeypatch: pytest.MonkeyPatch, failure: Exception) -> None:
    def front_end_input(prompt: str = "") -> str:  # what a kernel puts in builtins
        raise failure

    monkeypatch.setattr(builtins, "input", front_end_input)
    with pytest.raises(NoOneToAsk):
        ask_with_input("allow?")
    verdict = Approval().decide(request())
    assert not verdict.allowed and "no one can answer here" in verdict.reason


def test_the_interpreters_own_input_without_a_terminal_is_not_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # data meant for someone else
    with pytest.raises(NoOneToAsk):
        ask_with_input("allow?")
    assert sys.stdin.read() == "y\n"  # not consumed


def test_a_front_ends_input_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def front_end_input(prompt: str = "") -> str:
        asked.append(prompt)
        return "s"

    monkeypatch.setattr(builtins, "input", front_end_input)
    approval = Approval()
    assert approval.decide(request()).allowed and asked[0].startswith("nbagent: the model")
    assert approval.allowed() == [("mcp", "db")]


def test_no_ask_or_a_broken_ask_refuses() -> None:
    assert "asks no one" in Approval(ask=None).decide(request()).reason

    def broken(question: str) -> str:
        raise ValueError("boom")

    verdict = Approval(broken).decide(request())
    assert not verdict.allowed and "asking the user failed (ValueError)" in verdict.reason


def asking_agent(ask: Any, *, timeout: float = 60.0, before: float = 0.0,
                 again: int = 1) -> tuple[Any, list[str]]:
    """An agent whose tool `act` asks through the agent's Approval (as an MCP call does),
    then acts: returns it and the list of what acted."""
    acted: list[str] = []

    def act(what: str) -> str:
        """Do something that needs the user's yes."""
        time.sleep(before)
        verdict = agent.approval.decide(request(tool="act", what=what))
        if verdict.allowed:
            acted.append(what)
        return verdict.reason or "done"

    model = ScriptedModel([calls(("act", {"what": "first"})), *([reply("one")] * again),
                           calls(("act", {"what": "second"})), reply("two")])
    agent = Agent(model=model, tools=[act], builtin_tools=False, archive=False,
                  settings=Settings(tool_timeout_s=timeout))
    agent.approval.ask = ask
    return agent, acted


def test_the_question_is_asked_on_the_chats_thread_and_an_interrupt_there_cancels_it() -> None:
    asked_on: list[threading.Thread] = []
    answers = ["interrupt", "y"]

    def ask(question: str) -> str:
        asked_on.append(threading.current_thread())
        if answers.pop(0) == "interrupt":  # the user's ■ or Ctrl-C while the question waits
            raise KeyboardInterrupt
        return "y"

    agent, acted = asking_agent(ask, again=0)  # the interrupted turn gets no reply
    with pytest.raises(KeyboardInterrupt):
        agent.chat("first")
    assert acted == []  # the interrupted call never ran
    # the next call is asked (no lock left held, no question left open) and runs
    finished = threading.Event()
    worker = threading.Thread(target=lambda: (agent.chat("second"), finished.set()))
    worker.start()
    worker.join(30)
    assert finished.is_set(), "the next call hung"
    assert acted == ["second"]
    assert asked_on[0] is threading.main_thread() and asked_on[1] is worker


def test_a_question_from_a_call_that_was_abandoned_is_refused_never_asked() -> None:
    asked: list[str] = []
    agent, acted = asking_agent(lambda question: asked.append(question) or "y",
                                timeout=0.2, before=1.0)
    result = agent.chat("first")  # the tool is abandoned at its time limit
    assert "did not finish within 0.2 s" in str(agent.history.messages[-2]["content"])
    assert result.text == "one"
    time.sleep(1.5)  # its thread now asks, after the call it belonged to was over
    assert asked == [] and acted == []
