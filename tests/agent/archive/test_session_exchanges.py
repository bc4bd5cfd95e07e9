"""A cell's exchange: `Session.open_exchange` says whether it replaced an earlier one of the
same key, and the cell's key survives a resume (re-running the cell replaces, as live)."""

from __future__ import annotations

import pytest

from nbagent import Agent
from nbagent.testing import ScriptedModel, reply


def test_open_exchange_says_when_it_replaced_an_earlier_exchange() -> None:
    agent = Agent(model=ScriptedModel([reply("a"), reply("b")]), archive=False, namespace={})
    session = agent.session
    assert session.open_exchange("cell-1", "first") is False
    session.add({"role": "assistant", "content": "one"})
    assert session.open_exchange("cell-2", "second") is False
    session.add({"role": "assistant", "content": "two"})
    assert session.open_exchange("cell-1", "first again") is True
    assert [m["content"] for m in session.history.messages[1:]] == ["second", "two",
                                                                   "first again"]
    assert session.open_exchange(None, "no key") is False


def test_a_new_cells_exchange_opens_without_a_walk_of_the_rounds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell not seen before (each new cell of a notebook) has no exchange to replace: its
    turn does not list the history's rounds, a walk that grew with the session."""
    agent = Agent(model=ScriptedModel([reply("a")]), archive=False, namespace={})
    session = agent.session
    for n in range(3):
        session.open_exchange(f"cell-{n}", f"question {n}")
        session.add({"role": "assistant", "content": f"answer {n}"})
    walks: list[int] = []
    rounds = type(session.history).rounds
    monkeypatch.setattr(type(session.history), "rounds",
                        lambda self: walks.append(1) or rounds(self))
    assert session.open_exchange("cell-new", "another") is False
    assert walks == []
    assert session.open_exchange("cell-1", "question 1 again") is True  # a re-run: replaced
    assert walks and [m["content"] for m in session.history.messages[1:]] == [
        "question 0", "answer 0", "question 2", "answer 2", "another", "question 1 again"]
