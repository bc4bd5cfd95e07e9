"""What the meter reads through one turn (`ContextChanged`, the session's announcements):
the figure only rises within a turn, unless a compaction ran — whatever the count does
underneath (a usage that reads less than our estimate recalibrates it; the embedded
model's prompt shows the tools only at a turn's first request) — and never reads less
than the request the turn just sent. The count itself still converges on the usage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nbagent import (
    ModelCallError,
    Settings,
    Usage,
    estimate_tokens,
    tool,
    validate_messages,
)
from nbagent.events import ContextChanged
from nbagent.testing import ScriptedModel, calls, reply
from tests import helpers
from tests.helpers import make_agent

add = tool(helpers.add)
SYSTEM = "You answer questions about the user's data. " * 120  # ~1,400 estimated tokens
TOOLS_SHOWN = 300  # what the embedded-shaped model's prompt spends on its tools


class Readings:
    """Every figure the meter is told, in order: the one a new line shows at the turn's
    start (the context as it stands), then each `ContextChanged`; a compaction that
    changed the history before a figure is marked before it (the session announces the
    compacted state while the `Compacted` event is still being told, as the meter reads
    the last compaction from the controller)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.seen: list[int | str] = []
        self.compactions = 0
        agent.events.subscribe(self)

    def __call__(self, event: object) -> None:
        if isinstance(event, ContextChanged):
            done = sum(d.changed for d in self.agent.controller.decisions)
            if done > self.compactions:
                self.seen.append("compacted")
                self.compactions = done
            self.seen.append(event.state.tokens)

    def turn(self, text: str, **options: Any) -> list[int | str]:
        self.seen = [self.agent.context_state().tokens]  # what a new meter line starts at
        self.agent.chat(text, **options)
        return self.seen


def dips(seen: Sequence[int | str]) -> list[tuple[int, int]]:
    """Each fall of the figure that no compaction explains: (before, after)."""
    found, last = [], None
    for figure in seen:
        if figure == "compacted":
            last = None
        elif isinstance(figure, int):
            if last is not None and figure < last:
                found.append((last, figure))
            last = figure
    return found


def test_a_usage_under_our_estimate_never_lowers_the_figure_within_the_turn() -> None:
    sent: list[int] = []

    def under(answer: Any) -> Any:
        def step(messages: list[dict[str, Any]]) -> Any:
            sent.append(len(messages))
            return answer
        return step

    # the provider reads two thirds of what we count (our estimate runs high on this text)
    low = Usage(input_tokens=1_000, output_tokens=10)
    model = ScriptedModel([under(calls(("add", {"a": 1, "b": 2}), usage=low)),
                           under(calls(("add", {"a": 3, "b": 4}), usage=Usage(1_040, 10))),
                           under(reply("1+2=3 and 3+4=7.", usage=Usage(1_080, 12)))],
                          name="gpt-4o-mini")
    agent, _ = make_agent(model, tools=[add], system=SYSTEM, builtin_tools=False)
    readings = Readings(agent)
    before = agent.context_state().tokens
    seen = readings.turn("add some numbers")
    assert dips(seen) == [], seen
    assert max(int(f) for f in seen if f != "compacted") >= before
    # the count itself learnt from the usage: the next turn starts from it, not the estimate
    assert agent.context_state().tokens < before
    assert agent.context_state().tokens >= 1_080


def test_a_usage_under_our_estimate_with_no_tool_round() -> None:
    model = ScriptedModel([reply("hello", usage=Usage(900, 3)),
                           reply("again", usage=Usage(930, 3))], name="gpt-4o-mini")
    agent, _ = make_agent(model, system=SYSTEM, builtin_tools=False)
    readings = Readings(agent)
    assert dips(readings.turn("hi")) == []
    assert dips(readings.turn("and again")) == []


class ToolsFirstModel(ScriptedModel):
    """The embedded model's shape on the scripted seam: an exact count of each request,
    whose prompt shows the tools only until the turn's first round of calls (after it,
    `tool_choice` is "none" and no tool is shown), and no usage (it streams)."""

    def count_request(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] = (),
                      tool_choice: Any = None) -> int:
        spent = any(m["role"] == "assistant" and m.get("tool_calls")
                    for m in messages[_last_user(messages):])
        # as `LocalModel.choose_tools`: no choice given, the turn's round spent: "none"
        shown = bool(tools) and tool_choice != "none" and (tool_choice is not None or not spent)
        text = sum(estimate_tokens(str(m.get("content") or "")) + 4 for m in messages)
        return text + (TOOLS_SHOWN if shown else 0)


def _last_user(messages: list[dict[str, Any]]) -> int:
    return max((i for i, m in enumerate(messages) if m["role"] == "user"), default=0)


def test_the_embedded_shape_tools_only_at_the_first_request_never_dips() -> None:
    model = ToolsFirstModel([calls(("add", {"a": 1, "b": 2})), reply("3"),
                             calls(("add", {"a": 3, "b": 4})), reply("7")], name="local/smollm2")
    agent, _ = make_agent(model, tools=[add], window=2_048, builtin_tools=False)
    readings = Readings(agent)
    for question in ("add 1 and 2", "now 3 and 4"):
        seen = readings.turn(question)
        assert dips(seen) == [], seen
    # between turns the figure is the next request's own count (tools shown again)
    assert agent.context_state().tokens == model.count_request(
        agent.history.messages, agent.tool_schemas(), "auto")


def test_each_request_is_read_before_it_is_sent_and_the_figure_never_falls_below_it() -> None:
    model = ToolsFirstModel([calls(("add", {"a": 1, "b": 2})), reply("3")], name="local/smollm2")
    agent, _ = make_agent(model, tools=[add], window=2_048, builtin_tools=False)
    readings = Readings(agent)
    seen = readings.turn("add 1 and 2")
    first = model.count_request(model.requests[0], model.tools_seen[0], None)
    # the request with its tools was read while it was sent, and every figure after holds it
    assert first in seen
    assert all(f >= first for f in seen[seen.index(first):] if isinstance(f, int))


def test_only_a_compaction_lowers_the_figure_within_a_turn() -> None:
    big = "1.25 3.5 7.75 " * 400

    @tool
    def load(part: int) -> str:
        """Load one part of the data."""
        return f"part {part}: {big}"

    model = ScriptedModel([calls(("load", {"part": n})) for n in range(8)] + [reply("loaded")])
    settings = Settings(max_context_tokens=8_192, keep_recent_turns=0, snip_batch_tokens=0,
                        tool_output_max_chars=100_000)
    agent, _ = make_agent(model, settings=settings, tools=[load], builtin_tools=False)
    seen = Readings(agent).turn("load all the parts")
    assert "compacted" in seen  # the mid-loop snips ran, and lowered the figure
    falls = [(a, b) for a, b in zip(seen, seen[1:], strict=False)
             if isinstance(a, int) and isinstance(b, int) and b < a]
    assert falls == []  # each fall came right after a compaction, none without one
    assert dips(seen) == []
    at = seen.index("compacted")  # and the turn's highest figure did not hide it
    assert isinstance(seen[at - 1], int) and isinstance(seen[at + 1], int)
    assert seen[at + 1] < seen[at - 1]


def _interrupting(a: int, b: int) -> int:
    """Add two integers (and the user interrupts meanwhile).

    Args:
        a: the first.
        b: the second.
    """
    raise KeyboardInterrupt


@pytest.mark.parametrize("ending", ["interrupt mid-stream", "interrupt in a tool",
                                    "SystemExit in a callback", "error in a callback"])
def test_a_turn_that_ends_early_keeps_its_figure_risen_and_the_next_turn_starts_fresh(
        ending: str) -> None:
    """However a turn ends early, its figures never fell (the count underneath did: the
    usage reads under our estimate), the history is valid, and the session no longer holds
    the turn's figure: the meter between turns, and the next turn, read the context as it
    stands."""
    low = Usage(input_tokens=1_000, output_tokens=10)  # two thirds of our estimate
    in_tool = ending == "interrupt in a tool"
    answer = [] if in_tool else [reply("one and two make three", usage=Usage(1_040, 10))]
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2}), usage=low), *answer,
                           reply("again", usage=Usage(1_080, 10))], name="gpt-4o-mini")
    agent, _ = make_agent(model, tools=[tool(name="add")(_interrupting) if in_tool else add],
                          system=SYSTEM, builtin_tools=False)
    readings = Readings(agent)
    streamed: list[str] = []

    def on_text(delta: str) -> None:
        streamed.append(delta)
        if len(streamed) == 2:
            raise {"interrupt mid-stream": KeyboardInterrupt(),
                   "SystemExit in a callback": SystemExit(1)}.get(ending, RuntimeError("gone"))

    with pytest.raises((KeyboardInterrupt, SystemExit, ModelCallError)):
        readings.turn("add 1 and 2", on_text=on_text)
    assert dips(readings.seen) == [], readings.seen
    validate_messages(agent.history.messages)
    assert not agent.history.pending_tool_calls
    assert agent.session.reading().tokens == agent.context_state().tokens  # not held
    seen = readings.turn("and now?")
    assert dips(seen) == [], seen
    assert agent.history.messages[-1]["content"] == "again"
