"""`Approval`: scopes allowed and taken back, the answers a user gives, and every way no
one can answer (a batch kernel, EOF, no terminal) ending as a refusal, never a crash."""

from __future__ import annotations

import builtins
import io
import sys

import pytest
from IPython.core.error import StdinNotImplementedError

from nbagent.approval import Approval, ApprovalRequest, NoOneToAsk, ask_with_input


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
    ("s", True, [("mcp", "db")]), ("n", False, []), ("", False, []), ("maybe", False, []),
], ids=["y", "yes", "tool", "server", "n", "empty", "other"])
def test_each_answer(answer: str, allowed: bool, kept: list[tuple[str, ...]]) -> None:
    approval = Approval(Answers(answer))
    verdict = approval.decide(request())
    assert verdict.allowed is allowed and approval.allowed() == kept
    if not allowed:
        assert verdict.reason == "the user did not allow query (MCP server 'db') to run"


def test_the_question_shows_what_where_and_with_what_bounded() -> None:
    answers = Answers("n", "n")
    approval = Approval(answers)
    approval.decide(request(sql="select 1"))
    assert answers.questions[0] == (
        "nbagent: the model wants to call the MCP tool query (MCP server 'db') with:\n"
        '  {"sql": "select 1"}\nAllow? [y] yes, once · [t] always for this tool · '
        "[s] always for this server · [n] no: ")
    approval.decide(request(sql="x" * 10_000))
    assert len(answers.questions[1]) < 2_300 and "(10,011 characters)" in answers.questions[1]


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
