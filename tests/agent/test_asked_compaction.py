"""The compaction the model asks for (the `compact_context` tool,
`nbagent.agent._asked_compaction`): carried out when the turn that asked ends — never
between a call and its result — with the model's focus, as `%compact` is (a manual
compaction: the same event, the same undo), at most once in three user turns; refused
where compaction is off."""

from __future__ import annotations

from typing import Any

from nbagent import Agent, Settings
from nbagent.agent import EVERY_TURNS
from nbagent.events import Compacted
from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, reply
from tests.helpers import nine_sections

FOCUS = "keep the churn threshold 0.42 and the column names"


def agent_with(model: ScriptedModel, **settings: Any) -> tuple[Agent, ScriptedSummarizer]:
    summarize = ScriptedSummarizer(default=nine_sections("the churn threshold is 0.42"))
    agent = Agent(model=model, namespace={}, archive=False, summarize=summarize,
                  settings=Settings(**{"max_context_tokens": 64_000, **settings}))
    return agent, summarize


def earlier_turns(agent: Agent, count: int = 4) -> None:
    for turn in range(count):
        agent.chat(f"question {turn}: " + "what about the churn table? " * 40)


def test_the_compaction_runs_when_the_turn_ends_with_the_focus_and_can_be_undone() -> None:
    model = ScriptedModel([*(reply("an answer " * 40) for _ in range(4)),
                           calls(("compact_context", {"focus": FOCUS})), reply("phase done")])
    agent, summarize = agent_with(model)
    earlier_turns(agent)
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    before = agent.history.messages
    result = agent.chat("we are done with cleaning; compact")
    compactions = [e.decision for e in seen if isinstance(e, Compacted)]
    (decision,) = compactions
    assert decision.action == "compacted" and decision.trigger == "manual"
    assert decision.focus == FOCUS and FOCUS in summarize.last_prompt()
    assert result.decisions == [decision]
    # carried out after the turn's last message: the call had its result, the reply joined
    at = next(i for i, e in enumerate(seen) if isinstance(e, Compacted))
    added = [e.message for e in seen[:at] if type(e).__name__ == "MessageAdded"]
    assert [m["role"] for m in added] == ["user", "assistant", "tool", "assistant"]
    assert added[-1]["content"] == "phase done"
    assert model.requests[-1][-1]["role"] == "tool"  # the reply was asked uncompacted
    assert len(agent.history) < len(before) + 4
    agent.undo_compaction()  # as after %compact: nothing joined since
    assert agent.history.messages[:len(before)] == before
    assert agent.history.messages[-1] == {"role": "assistant", "content": "phase done"}


def test_at_most_once_in_three_turns_and_one_request_at_a_time() -> None:
    model = ScriptedModel([reply("an answer " * 40) for _ in range(4)]
                          + [calls(("compact_context", {}), ("compact_context", {})),
                             reply("asked"), calls(("compact_context", {})), reply("again"),
                             reply("plain"), reply("plain"),
                             calls(("compact_context", {"focus": "x"})), reply("later")])
    agent, _ = agent_with(model)
    earlier_turns(agent)
    results: list[str] = []  # what the model read (a compaction folds the messages away)
    agent.events.subscribe(lambda e: results.append(e.preview)
                           if type(e).__name__ == "ToolFinished" else None)
    agent.chat("compact now")
    first, twice = results
    assert first.startswith("Compaction requested") and twice.startswith("Already requested")
    agent.chat("and again")
    assert results[-1].startswith("Not compacted: the conversation was compacted at your "
                                  "request 1 turn ago; at most once in 3")
    for _ in range(EVERY_TURNS - 1):
        agent.chat("next")
    agent.chat("compact later")
    assert results[-1].startswith("Compaction requested")
    manual = [d for d in agent.controller.decisions if d.trigger == "manual"]
    assert [d.action for d in manual] == ["compacted", "compacted"]
    model.assert_consumed()


def test_refused_where_compaction_is_off() -> None:
    model = ScriptedModel([calls(("compact_context", {"focus": "x"})), reply("ok")])
    agent, _ = agent_with(model, disable_compact=True)
    agent.chat("compact")
    (refused,) = [m["content"] for m in agent.history if m["role"] == "tool"]
    assert refused.startswith("Not compacted: compaction is off")
    assert list(agent.controller.decisions) == [] or all(
        d.trigger != "manual" for d in agent.controller.decisions)
