"""A cell's exchange: `Session.open_exchange` says whether it replaced an earlier one of the
same key, and the cell's key survives a resume (re-running the cell replaces, as live)."""

from __future__ import annotations

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
