"""Where the window stops a turn (`nbagent.agent._window_stops`), driven by the scripted
model: the blocking limit stops before sending and names what fills the window (the system
prompt and tools, a pin, a tool output), and a reply whose stop reason says the window ran
out is recovered as an overflow, its tool calls answered unrun. A prompt the server cut at
its front is tests/agent/test_front_cut_loop.py's."""

from __future__ import annotations

from nbagent import Settings, tool
from nbagent.testing import ScriptedModel, reply
from tests import helpers
from tests.helpers import make_agent, tool_results

add = tool(helpers.add)


def test_the_blocking_limit_stops_before_sending_with_what_to_do() -> None:
    model = ScriptedModel([reply("never sent")])
    agent, _ = make_agent(model, settings=Settings(max_context_tokens=2_048,
                                                   disable_compact=True))
    agent.history.extend([{"role": "user", "content": "x " * 2_000},
                          {"role": "assistant", "content": "noted"}])
    result = agent.chat("and now?")
    assert result.stop_reason == "blocked" and model.requests == []
    stop = result.stop_message or ""
    assert "agent.compact()" in stop and "bigger window" in stop and "%" not in stop
    assert "agent.undo_compaction()" in stop and "agent.configure(max_context_tokens=N)" in stop


def test_a_message_that_cannot_fit_beside_the_system_prompt_and_tools_says_exactly_that(
        ) -> None:
    """Issue 42: "not sent" only when the system prompt, the tools and that message cannot
    fit together — whatever came before it is folded first."""
    model = ScriptedModel([reply("never sent")])
    agent, _ = make_agent(model, window=2_048, tools=[add])
    for t in range(6):
        agent.history.extend([{"role": "user", "content": f"old {t} " * 200},
                              {"role": "assistant", "content": "noted " * 50}])
    result = agent.chat("x " * 3_000)
    assert result.stop_reason == "blocked" and model.requests == []
    stop = result.stop_message or ""
    assert stop.startswith("Not sent: the system prompt, the tools and this message take")
    assert "everything older was folded already" in stop and "bigger window" in stop
    assert "old 0" not in str(agent.history.messages[1:-1])  # made room first, then refused



def test_a_stop_reason_saying_the_window_ran_out_is_recovered_as_an_overflow() -> None:
    agent, _ = make_agent(ScriptedModel([
        reply("partial", finish_reason="model_context_window_exceeded")]))
    for t in range(4):
        agent.history.extend([{"role": "user", "content": f"old {t} " * 300},
                              {"role": "assistant", "content": f"answer {t} " * 300}])
    result = agent.chat("go")
    assert result.stop_reason == "overflow" and result.truncated
    assert [d.trigger for d in result.decisions] == ["overflow"]
    assert "archive" in (result.stop_message or "")



def test_a_window_smaller_than_the_system_prompt_and_tools_is_a_clear_stop() -> None:
    model = ScriptedModel([reply("never sent")])
    agent, _ = make_agent(model, settings=Settings(max_context_tokens=300), tools=[add],
                          system="You are careful. " * 60)
    result = agent.chat("hi")
    assert result.stop_reason == "blocked" and model.requests == []
    assert "system prompt and the tool schemas alone" in (result.stop_message or "")



def test_a_cut_reply_with_tool_calls_leaves_them_answered_and_the_session_goes_on() -> None:
    from nbagent.testing import Step

    cut = Step(tool_calls=(("add", {"a": 1, "b": 2}),),
               finish_reason="model_context_window_exceeded")
    agent, _ = make_agent(ScriptedModel([cut, reply("next")]), tools=[add])
    assert agent.chat("go").stop_reason == "overflow"
    assert tool_results(agent) == ["Not run: the reply was cut when the context window ran out."]
    assert agent.chat("again").text == "next"



def test_a_huge_pin_is_named_as_the_cause_with_the_call_that_removes_it() -> None:
    model = ScriptedModel([reply("never sent")])
    agent, _ = make_agent(model, settings=Settings(max_context_tokens=2_048), tools=[add])
    agent.pin("a short fact: churn_30d is the target")
    agent.pin("the full data dictionary: " + "column_name means something " * 400)
    result = agent.chat("hi")
    stop = result.stop_message or ""
    assert result.stop_reason == "blocked" and model.requests == []
    assert "pin 1" in stop and "agent.unpin(1)" in stop and "%" not in stop
    assert stop.split("tokens (", 1)[1].startswith("pin 1")  # the largest part first
    assert stop.index("agent.unpin(1)") < stop.index("new_session(builtin_tools=False)")



def test_a_huge_tool_output_is_named_when_compaction_cannot_shrink_the_conversation() -> None:
    model = ScriptedModel([reply("never sent")])
    agent, _ = make_agent(model, settings=Settings(max_context_tokens=2_048,
                                                   disable_compact=True))
    agent.history.extend([
        {"role": "user", "content": "load it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "row " * 3_000},
        {"role": "assistant", "content": "loaded"}])
    stop = agent.chat("and now?").stop_message or ""
    assert "a tool output (message 3" in stop and "agent.compact()" in stop

