"""The embedded model's server, warm-started by `%load_ext` (`Agent.warm_up`), is let go of
whichever way the kernel's agent stops chatting with it — another agent made, set or resumed
in its place, its model changed — and kept when the agent in its place chats with the same
embedded model (issue 40 item 3). The served model is a stand-in that counts its releases;
tests/real/test_warm_start_released.py runs the same ways in a real kernel on the real
server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import nbagent
from nbagent.agent import kernel_agent
from nbagent.agent.models import EmbeddedModel
from nbagent.testing import ScriptedModel

OTHER = "openai/gpt-4o-mini"  # chosen, never called


class Served:
    """What the embedded model's start returns, as `release` reaches it: its `server`."""

    name, context_window, max_output = "openai/local", 2048, 512

    def __init__(self) -> None:
        self.server, self.released = self, 0

    def release(self) -> None:
        self.released += 1


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Served]]:
    """Every served model started; the kernel's agent forgotten before and after."""
    for name in ("NBAGENT_MODEL", "NBAGENT_LOCAL_MODEL_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    started: list[Served] = []

    def serve(self: EmbeddedModel) -> Served:
        started.append(Served())
        return started[-1]

    monkeypatch.setattr(EmbeddedModel, "_serve", serve)
    nbagent.set_current(None)
    yield started
    left = kernel_agent()
    if left is not None:
        left.session.close()
    nbagent.set_current(None)


def warmed() -> EmbeddedModel:
    """The kernel's agent on the embedded model, its server warm-started (and up)."""
    agent = nbagent.current()
    assert isinstance(agent.model, EmbeddedModel) and agent.warm_up()
    agent.model.started()
    return agent.model


def earlier_session() -> str:
    earlier = nbagent.Agent(model=ScriptedModel(default="hi"), namespace={})
    earlier.chat("hello")
    earlier.close()
    return earlier.session_id


WAYS: dict[str, Callable[[str], Any]] = {
    "new_session(model=)": lambda _: nbagent.new_session(model=OTHER),
    "set_current(Agent(model=))": lambda _: nbagent.set_current(nbagent.Agent(model=OTHER)),
    "set_current(None)": lambda _: nbagent.set_current(None),
    "current(model=)": lambda _: nbagent.current(model=OTHER),
    "current(new=True, model=)": lambda _: nbagent.current(new=True, model=OTHER),
    "configure(model=)": lambda _: nbagent.current().configure(model=OTHER),
    "a resume with another model": lambda earlier: nbagent.current(resume=earlier,
                                                                   model=OTHER),
}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_the_warm_started_server_is_let_go_when_another_model_is_chosen(
        way: str, served: list[Served]) -> None:
    earlier = earlier_session()
    embedded = warmed()
    WAYS[way](earlier)
    assert [s.released for s in served] == [1]  # let go of once: the server ends when
    assert embedded.running is None  # no kernel holds it; a later request starts it again


KEPT: dict[str, Callable[[str], Any]] = {
    "current(new=True)": lambda _: nbagent.current(new=True),
    "new_session()": lambda _: nbagent.new_session(),
    "reset()": lambda _: nbagent.reset(),
    "set_current(Agent())": lambda _: nbagent.set_current(nbagent.Agent()),
    "a resume on it": lambda earlier: nbagent.current(resume=earlier, model="local"),
    "current(model='local')": lambda _: nbagent.current(model="local"),
}


@pytest.mark.parametrize("way", sorted(KEPT))
def test_the_warm_started_server_is_kept_when_the_embedded_model_still_answers(
        way: str, served: list[Served]) -> None:
    earlier = earlier_session()
    embedded = warmed()
    KEPT[way](earlier)
    agent = nbagent.current()
    assert agent.model is embedded and embedded.running is served[0]  # handed over
    assert [s.released for s in served] == [0]
    statuses: list[str] = []
    agent.events.subscribe(lambda e: statuses.append(getattr(e, "text", "")))
    embedded.on_status("restarting")  # its lines reach the agent that chats with it now
    assert "restarting" in statuses
