"""Each question answered once per change: in one chat turn with one tool round the
settings are built, the window resolved, the thresholds computed and the tool schemas
listed at most once, and the tokens counted once per change of the history — and a change
of what they depend on (an override, an environment variable, a learned limit, a new tool,
a usage) is seen at the next question. Counted with the interpreter's profiler hook (no
patching): before this, one such turn built the settings 33 times, resolved the window 20
times, computed the thresholds 12 times and counted the tokens 9 times."""

from __future__ import annotations

import collections
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any

import pydantic
import pytest

import nbagent
from nbagent.agent import Toolbox
from nbagent.engine import EngineSettings, TokenTracker, resolve_window, thresholds
from nbagent.testing import ScriptedModel, calls, reply

WATCHED: dict[CodeType, str] = {
    resolve_window.__code__: "window",
    thresholds.__code__: "thresholds",
    Toolbox._gather.__code__: "schemas",
    pydantic.BaseModel.__init__.__code__: "settings",
    TokenTracker.count.__code__: "count",
}


@contextmanager
def counted() -> Iterator[collections.Counter[str]]:
    hits: collections.Counter[str] = collections.Counter()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        name = WATCHED.get(frame.f_code) if event == "call" else None
        if name == "settings" and not isinstance(frame.f_locals.get("self"), EngineSettings):
            return
        if name is not None:
            hits[name] += 1

    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        yield hits
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def add_one(x: int) -> str:
    """Add one to x."""
    return str(x + 1)


def agent_with(*steps: Any) -> nbagent.Agent:
    return nbagent.Agent(model=ScriptedModel(list(steps)), tools=[add_one], archive=False,
                         namespace={})


def test_one_turn_with_a_tool_round_answers_each_question_at_most_once() -> None:
    agent_with(reply("warm")).chat("hi")  # imports (litellm's among them) outside the count
    agent = agent_with(calls(("add_one", {"x": 1})), reply("2"))
    agent.context_state()  # as a meter shown at the turn's start reads it (a chat cell's)
    with counted() as hits:
        result = agent.chat("add one to 1")
    assert result.text == "2"
    assert hits["settings"] <= 1 and hits["window"] <= 1 and hits["thresholds"] <= 1
    assert hits["schemas"] == 0  # the tools did not change
    # The state the turn starts from (its meter's first figure) was counted before it: the
    # turn finds that count, as every turn after a session's first does.
    # One count per state of the history the turn reads: the user's message (the check
    # before the first request), the tool call (the meter), its result (the mid-loop
    # check) and the answer (the meter). The other asks in between — the blocking check
    # before each request, the check before the second request, the meter after the tool
    # round and at the end — find the history unchanged and read that count. The tool
    # call's count is not superseded unseen: the meter shows it while the tool runs
    # (test_the_meter_shows_the_turns_request_while_its_tool_runs), so 4, not 3.
    assert hits["count"] <= 4


def test_an_unchanged_history_is_counted_once_and_a_change_recounts() -> None:
    agent = agent_with(reply("hello there"))
    agent.chat("hi")
    session = agent.session
    session.add({"role": "user", "content": "and one more thing"})
    with counted() as hits:
        before = [session.answers.count(agent.history) for _ in range(5)]
    assert hits["count"] == 1 and len(set(before)) == 1

    def double(x: int) -> str:
        """Double x, a tool whose schema takes room in every request."""
        return str(2 * x)

    agent.add_tool(double)  # the tools changed: the same history is counted again
    with counted() as hits:
        with_tool = session.answers.count(agent.history)
    assert hits["count"] == 1 and with_tool > before[0]
    session.tracker.record_usage(agent.history, nbagent.Usage(input_tokens=with_tool + 40),
                                 model=agent.model.name, tools=agent.tool_schemas())
    with counted() as hits:  # a usage the provider reported: what the tracker knows changed
        assert session.answers.count(agent.history) == with_tool + 40
    assert hits["count"] == 1


def test_a_change_is_seen_at_the_next_question(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_MAX_CONTEXT_TOKENS", raising=False)
    agent = agent_with(reply("ok"), reply("ok"))

    def window() -> int:
        return agent.context_state().thresholds.window.raw_window

    before = window()
    agent.configure(max_context_tokens=9_000)  # an override
    assert window() == 9_000 != before
    agent = agent_with(reply("ok"))
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", "12000")  # the environment, mid-session
    assert window() == 12_000
    agent.session.learn_window(10_000)  # a limit the provider stated
    assert window() == 10_000
    assert agent.session.controller.thresholds().window.raw_window == 10_000

    def double(x: int) -> str:
        """Double x."""
        return str(2 * x)

    agent.add_tool(double)  # a new tool: the schemas sent with the next request have it
    names = [s["function"]["name"] for s in agent.tool_schemas()]
    assert "double" in names and "add_one" in names


def test_settings_are_one_object_until_a_variable_changes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_KEEP_RECENT_TURNS", "4")
    first = nbagent.Settings.from_env()
    assert nbagent.Settings.from_env() is first
    monkeypatch.setenv("NBAGENT_KEEP_RECENT_TURNS", "5")
    assert nbagent.Settings.from_env() is not first
    assert nbagent.Settings.from_env().keep_recent_turns == 5


def test_the_meter_shows_the_turns_request_while_its_tool_runs() -> None:
    """While a tool runs (a long computation, an approval the user answers) the meter
    shows the history as it is then — this turn's message and the tool call — not the end
    of the previous turn: the recount after the tool-call message is what it shows."""
    from nbagent.widgets import MeterLine

    during: list[tuple[int, int]] = []

    def slow_tool(x: int) -> str:
        """Add one to x."""
        reading = line.reading
        assert reading is not None
        during.append((reading.tokens, agent.context_state().tokens))
        return str(x + 1)

    agent = nbagent.Agent(model=ScriptedModel([reply("warm"), calls(("slow_tool", {"x": 1})),
                                               reply("2")]),
                          tools=[slow_tool], archive=False, namespace={})
    agent.chat("hi")
    line = MeterLine.follow(agent)
    before = agent.context_state().tokens
    agent.chat("add one to 1, " + "with a long explanation " * 60)
    ((shown, now),) = during
    assert shown == now > before + 200  # this turn's message is in what the meter shows


# -- limits: one snapshot per entry point ---------------------------------------------------

@contextmanager
def climbs(agent: nbagent.Agent) -> Iterator[collections.Counter[str]]:
    """How often the agent's window is resolved and its settings read (from the
    environment, with the agent's overrides): each is one climb from a caller up to the
    agent's configuration, whether or not an answer is cached."""
    watched = {type(agent.session.answers.model).resolve_window.__code__: "window",
               nbagent.Settings.from_env.__code__: "settings"}
    hits: collections.Counter[str] = collections.Counter()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        name = watched.get(frame.f_code) if event == "call" else None
        if name is not None:
            hits[name] += 1

    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        yield hits
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def chatted(*steps: Any) -> nbagent.Agent:
    """An agent with three exchanges behind it, the chat model writing its own summaries
    (its default reply), then `steps` to come."""
    warm = [reply(f"answer {i}: sales_df has {i} rows " + "and more detail " * 40)
            for i in range(3)]
    agent = nbagent.Agent(model=ScriptedModel([*warm, *steps], default=reply(
        "- notes about sales_df")), tools=[add_one], archive=False, namespace={})
    for i in range(3):
        agent.chat(f"question {i} about sales_df")
    return agent


def test_a_turn_a_compaction_and_a_meter_reading_each_take_one_snapshot_of_the_limits(
        ) -> None:
    """Each entry point asks for the window and the settings once and passes that snapshot
    down (the controller, the tool schemas sized to the window, the notebook listing, the
    tool results' cap, the meter after each message). Before, one such turn resolved the
    window 31 times and read the settings 55 times; a compaction 7 and 17."""
    from nbagent.widgets import MeterLine

    agent = chatted(calls(("add_one", {"x": 1})), reply("2"))
    with climbs(agent) as hits:  # a turn with a tool round
        assert agent.chat("add one to 1").text == "2"
    assert hits == {"window": 1, "settings": 1}
    with climbs(agent) as hits:  # a compaction, its summary written by the chat model
        decision = agent.compact()
    assert decision.action == "compacted" and decision.summary_calls >= 1
    assert hits == {"window": 1, "settings": 1}
    with climbs(agent) as hits:  # a meter reading: the line made for the session
        reading = MeterLine.follow(agent).reading
    assert reading is not None and reading.window == agent.window().raw_window
    assert hits == {"window": 1, "settings": 1}
    with climbs(agent) as hits:  # what fills the window (%context): tools and state
        agent.breakdown()
    assert hits == {"window": 1, "settings": 1}


def test_a_window_learned_in_a_turn_is_worked_under_from_then_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn's snapshot is taken again where the turn itself changes the window: the
    provider states a smaller limit, and the retry's compaction, tool sizing and meter
    work under it."""
    monkeypatch.delenv("NBAGENT_MAX_CONTEXT_TOKENS", raising=False)
    from nbagent.events import ContextChanged
    from nbagent.testing import provider_error

    agent = chatted(provider_error(400, "This model's maximum context length is 6000 tokens. "
                                        "However, your messages resulted in 9000 tokens."),
                    reply("fits now"))
    seen: list[int] = []

    def meter(event: object) -> None:
        if isinstance(event, ContextChanged):
            seen.append(event.state.thresholds.window.raw_window)

    agent.events.subscribe(meter)
    assert agent.chat("one more question").text == "fits now"
    assert agent.window().raw_window == 6_000 and seen and seen[-1] == 6_000
