"""The runner of the model's code outside a notebook (`nbagent.agent.tools._code_runner`):
the `PlainRunner` asks on the terminal (nobody there is a refusal; the typed answer is read
as run, cell or no) and its result carries the outputs the notebook would show. Through
the `run_code` tool: test_run_code."""

from __future__ import annotations

import pytest

from nbagent.code import CodeResult, PlainRunner, answer_of


def test_the_plain_runner_asks_on_stdin_and_nobody_there_is_a_refusal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def closed(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", closed)
    assert PlainRunner().ask("x = 1", "", "agent run 1") is None
    monkeypatch.setattr("builtins.input", lambda prompt="": "c")
    assert PlainRunner().ask("x = 1", "", "agent run 1") == "cell"
    assert [answer_of(t) for t in ("", "yes", "cell", "nope")] == ["run", "run", "cell", "no"]


def test_a_plain_result_carries_outputs_for_the_notebook() -> None:
    result = PlainRunner().run("3 * 3", {}, "agent run 1")
    assert isinstance(result, CodeResult)
    assert [(o.text, o.types) for o in result.outputs] == [("9", ("text/plain",))]
    assert result.status == "ok"
