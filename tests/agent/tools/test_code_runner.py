"""The runner of the model's code outside a notebook (`nbagent.agent.tools._code_runner`):
the `PlainRunner` asks the one question on the terminal, the code in it exactly as it
runs (nobody there is a refusal) and its result carries the outputs the notebook would
show. Through the `run_code` tool: test_run_code."""

from __future__ import annotations

import pytest

from nbagent.approval import Approval
from nbagent.code import CodeResult, PlainRunner, code_request


def plain_ask(code: str) -> object:
    approval = Approval()  # asks with input(), as a terminal does
    return PlainRunner().ask(code, "tidy", "agent run 1", lambda shown_at: approval.decide(
        code_request(code, "tidy", "agent run 1", shown_at)))


def test_the_plain_runner_asks_the_one_question_and_nobody_there_is_a_refusal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def closed(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", closed)
    assert plain_ask("x = 1").outcome == "no one"  # type: ignore[attr-defined]
    monkeypatch.setattr("builtins.input", lambda prompt="": "c")
    assert plain_ask("x = 1").outcome == "c"  # type: ignore[attr-defined]


def test_the_terminal_question_shows_the_code_exactly_as_it_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt="": asked.append(prompt) or "n")
    # an escape sequence that would erase the line above, and a statement behind a lone CR
    code = "total = 1\nsafe = True  # \x1b[1A\x1b[2K\rimport shutil; shutil.rmtree('data')"
    assert not plain_ask(code).allowed  # type: ignore[attr-defined]
    (question,) = asked
    assert "\x1b" not in question and "\r" not in question
    assert "safe = True  # ⟨U+001B⟩[1A⟨U+001B⟩[2K⟨U+000D⟩\nimport shutil" in question
    assert "total = 1\n" in question and "U+001B ESCAPE, U+000D CARRIAGE RETURN" in question


def test_a_plain_result_carries_outputs_for_the_notebook() -> None:
    result = PlainRunner().run("3 * 3", {}, "agent run 1")
    assert isinstance(result, CodeResult)
    assert [(o.text, o.types) for o in result.outputs] == [("9", ("text/plain",))]
    assert result.status == "ok"
