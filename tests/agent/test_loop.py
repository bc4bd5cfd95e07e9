"""The chat loop (`nbagent.agent._loop`), driven by the scripted model at the llm seam (no
patching): tools, streaming, retries, overflow recovery, mid-loop compaction, limits. A call
repeated in a row is tests/agent/test_tool_round.py's; a malformed reply, test_reply.py's;
where the window stops a turn (blocked before sending, a reply the window cut),
test_window_stops.py's."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import ModelCallError, Settings, Usage, tool, validate_messages
from nbagent.events import Compacted, ContextChanged, Retrying
from nbagent.testing import (
    ScriptedModel,
    ScriptedSummarizer,
    calls,
    is_snipped,
    parse_floor,
    provider_error,
    reply,
)
from tests import helpers
from tests.helpers import make_agent, nine_sections, tool_results

OVERFLOW = (
    "This model's maximum context length is 2048 tokens. However, you requested 3051 "
    "tokens (2851 in the messages, 200 in the completion)."
)


add = tool(helpers.add)


def test_a_multi_round_tool_session() -> None:
    model = ScriptedModel(
        [
            calls(("add", {"a": 1, "b": 2})),
            calls(("add", {"a": 3, "b": 4})),
            reply("1+2=3 and 3+4=7."),
        ]
    )
    agent, _ = make_agent(model, tools=[add])
    result = agent.chat("add some numbers")
    assert (result.text, result.rounds, result.stop_reason) == ("1+2=3 and 3+4=7.", 2, "done")
    assert tool_results(agent) == ["3", "7"]
    assert model.requests[1][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}
    assert any(t["function"]["name"] == "add" for t in model.tools_seen[0])
    validate_messages(agent.history.messages)
    model.assert_consumed()


def test_an_overflow_on_the_first_request_is_recovered_by_l4_and_retried() -> None:
    model = ScriptedModel([provider_error(400, OVERFLOW), reply("fits now")])
    agent, _ = make_agent(model)
    for t in range(6):
        agent.history.extend(
            [
                {"role": "user", "content": f"old question {t} " * 200},
                {"role": "assistant", "content": f"old answer {t} " * 200},
            ]
        )
    before = len(agent.history)
    result = agent.chat("latest question")
    assert result.text == "fits now"
    overflow = [d for d in result.decisions if d.trigger == "overflow"]
    assert overflow and overflow[0].levels == ["L4 overflow"]
    sent = model.requests[1]
    assert len(sent) < before + 1 and sent[-1] == {"role": "user", "content": "latest question"}
    # the first request is never dropped: it leads the floor of the block L4 wrote, whole
    first = "old question 0 " * 200
    assert parse_floor(str(sent[1]["content"])).user_messages[0] == first


def test_an_unrecoverable_overflow_stops_with_an_actionable_message_and_loses_nothing() -> None:
    model = ScriptedModel([provider_error(400, OVERFLOW)] * 3)
    agent, _ = make_agent(model, window=2_048)
    with pytest.raises(ModelCallError) as caught:
        agent.chat("x " * 50)
    message = str(caught.value)
    assert caught.value.kind == "overflow"
    assert (
        "2,048 tokens, from env" in message
        and "agent.compact()" in message and "%" not in message
        and "the archive keeps every message" in message
    )
    assert agent.history[-1] == {"role": "user", "content": "x " * 50}
    model.assert_consumed()


def test_rate_limits_and_overload_are_retried_honouring_retry_after() -> None:
    model = ScriptedModel(
        [
            provider_error(429, "Rate limit reached", retry_after=7),
            provider_error(503, "Service Unavailable"),
            provider_error(529, "Overloaded", retry_after=2),
            reply("ok"),
        ]
    )
    agent, sleeps = make_agent(model)
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    assert agent.chat("hi").text == "ok"
    assert sleeps[0] == 7 and sleeps[2] == 2 and 0 <= sleeps[1] <= 30
    assert [e.attempt for e in seen if isinstance(e, Retrying)] == [1, 2, 3]


@pytest.mark.parametrize("status", [401, 400, 403])
def test_auth_errors_and_bad_requests_are_not_retried(status: int) -> None:
    model = ScriptedModel(
        [
            provider_error(
                status,
                "Incorrect API key provided"
                if status != 400
                else "Invalid value for 'tool_choice'",
            )
        ]
    )
    agent, sleeps = make_agent(model)
    with pytest.raises(ModelCallError) as caught:
        agent.chat("hi")
    assert sleeps == [] and len(model.requests) == 1
    assert caught.value.kind == ("other" if status == 400 else "auth")


def test_retries_are_bounded() -> None:
    model = ScriptedModel(default=provider_error(503, "Service Unavailable"))
    agent, sleeps = make_agent(model)
    with pytest.raises(ModelCallError, match="kept failing after 5 attempts"):
        agent.chat("hi")
    assert (
        len(model.requests) == agent.retry.max_attempts
        and len(sleeps) == agent.retry.max_attempts - 1
    )


def test_mid_loop_snip_fires_between_tool_rounds_and_the_meter_moves_each_round() -> None:
    big = "1.25 3.5 7.75 " * 400

    @tool
    def load(part: int) -> str:
        """Load one part of the data."""
        return f"part {part}: {big}"

    steps = [calls(("load", {"part": n}), usage=None) for n in range(8)] + [reply("loaded")]
    model = ScriptedModel(steps)
    settings = Settings(
        max_context_tokens=8_192,
        keep_recent_turns=0,
        snip_batch_tokens=0,
        tool_output_max_chars=100_000,
    )
    agent, _ = make_agent(model, settings=settings, tools=[load], builtin_tools=False)
    states: list[int] = []
    agent.events.subscribe(
        lambda e: states.append(e.state.tokens) if isinstance(e, ContextChanged) else None
    )
    result = agent.chat("load all the parts")
    midloop = [d for d in result.decisions if d.trigger == "midloop"]
    assert midloop and all(d.levels == ["L1 snip"] for d in midloop)
    assert any(d.action == "compacted" for d in midloop)  # it happened, not just tried
    assert any(map(is_snipped, tool_results(agent)))
    assert len(set(states)) >= 8  # the state changed after every round, not only at the end
    validate_messages(agent.history.messages)


def test_max_rounds_stops_with_a_one_line_reason() -> None:
    model = ScriptedModel([calls(("add", {"a": n, "b": 0})) for n in range(3)])
    agent, _ = make_agent(model, settings=Settings(max_tool_rounds=3), tools=[add])
    result = agent.chat("go")
    assert result.stop_reason == "max_rounds" and result.stop_message == (
        "Stopped after 3 rounds of tool calls (NBAGENT_MAX_TOOL_ROUNDS)."
    )


def test_text_streams_through_the_callback() -> None:
    agent, _ = make_agent(ScriptedModel([reply("the mean is 4.2")]))
    pieces: list[str] = []
    agent.chat("mean?", on_text=pieces.append)
    assert pieces == ["the", " mean", " is", " 4.2"]


def test_usage_and_cost_are_recorded() -> None:
    model = ScriptedModel(
        [
            reply("a", usage=Usage(input_tokens=2_000, output_tokens=5), cost=0.002),
            reply("b", cost=0.003),
        ]
    )
    agent, _ = make_agent(model)
    agent.chat("one")
    assert agent.context_state().tokens >= 2_000
    second = agent.chat("two")
    assert agent.cost == pytest.approx(0.005) and second.cost == pytest.approx(0.003)


def test_compaction_at_the_turn_boundary_uses_the_summarizer() -> None:
    model = ScriptedModel(default=reply("ok"))
    summarize = ScriptedSummarizer(default=nine_sections())
    agent, _ = make_agent(model, window=4_096, summarize=summarize)
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    for t in range(30):
        agent.chat(f"question {t}: " + "explain the revenue column in detail " * 20)
        state = agent.context_state()  # compaction runs before the next request, so a reply
        assert state.tokens < state.thresholds.blocking  # may cross the trigger, never the limit
    assert any(isinstance(e, Compacted) and e.decision.action == "compacted" for e in seen)
    assert summarize.calls >= 1


def test_tool_choice_forces_the_first_request_only() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1})), reply("2")])
    agent, _ = make_agent(model, tools=[add])
    agent.chat("add", tool_choice="add")
    assert model.tool_choices == [{"type": "function", "function": {"name": "add"}}, None]


def test_the_chat_stops_after_its_time_budget() -> None:
    import time

    @tool
    def slow() -> str:
        """Take a while."""
        time.sleep(0.05)
        return "done"

    model = ScriptedModel(default=calls(("slow", {})))
    agent, _ = make_agent(model, settings=Settings(max_chat_seconds=0.01), tools=[slow])
    result = agent.chat("go slowly")
    assert result.stop_reason == "timeout" and result.rounds == 1
    assert result.stop_message == "Stopped after 0.01 s (NBAGENT_MAX_CHAT_SECONDS)."


# -- a session never breaks ------------------------------------------------------------------


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), SystemExit(2), GeneratorExit()],
                         ids=["interrupt", "system-exit", "generator-exit"])
def test_whatever_ends_a_turn_early_leaves_a_valid_history_and_the_next_chat_works(
        stop: BaseException) -> None:
    @tool
    def sleepy() -> str:
        """Stands in for a tool the user interrupts."""
        raise stop

    model = ScriptedModel([calls(("sleepy", {}), ("add", {"a": 1, "b": 1})), reply("again")])
    agent, _ = make_agent(model, tools=[sleepy, add])
    if isinstance(stop, SystemExit):  # sys.exit inside a tool ends the tool, not the chat
        assert agent.chat("go").text == "again"
        assert tool_results(agent)[0] == "Error: sleepy exited (SystemExit 2)."
        return
    if isinstance(stop, GeneratorExit):  # any BaseException but the user's interrupt, too
        assert agent.chat("go").text == "again"
        assert tool_results(agent)[0].startswith("Error: sleepy raised GeneratorExit")
        return
    with pytest.raises(type(stop)):
        agent.chat("go")
    results = tool_results(agent)
    assert results == ["Interrupted: this tool call did not finish (the user stopped the turn)."] * 2
    validate_messages(agent.history.messages)
    agent.history.check_ready()
    assert agent.chat("and now?").text == "again"


def test_an_interrupt_mid_stream_keeps_the_half_reply() -> None:
    model = ScriptedModel([reply("the answer is forty two"), reply("next")])
    agent, _ = make_agent(model)
    words: list[str] = []

    def on_text(delta: str) -> None:
        words.append(delta)
        if len(words) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        agent.chat("what is it?", on_text=on_text)
    assert agent.history[-1] == {"role": "assistant",
                                 "content": "the answer is [interrupted]"}
    assert agent.chat("go on").text == "next"


def test_a_failing_subscriber_never_breaks_a_chat() -> None:
    agent, _ = make_agent(ScriptedModel([reply("fine")]))

    def broken(event: object) -> None:
        raise RuntimeError("display gone")

    agent.events.subscribe(broken)
    assert agent.chat("hi").text == "fine"


def test_a_second_chat_on_a_busy_agent_fails_at_once() -> None:
    import threading

    from nbagent import BusyError

    entered, release = threading.Event(), threading.Event()

    @tool
    def wait() -> str:
        """Blocks until released."""
        entered.set()
        release.wait(10)
        return "done"

    agent, _ = make_agent(ScriptedModel([calls(("wait", {})), reply("first")]), tools=[wait])
    results: list[str] = []
    worker = threading.Thread(target=lambda: results.append(agent.chat("one").text))
    worker.start()
    assert entered.wait(10)
    with pytest.raises(BusyError, match="busy"):
        agent.chat("two")
    release.set()
    worker.join(10)
    assert results == ["first"]
    validate_messages(agent.history.messages)


def test_an_overflow_teaches_the_session_the_real_window() -> None:
    model = ScriptedModel([provider_error(400, OVERFLOW), reply("fits now"), reply("b")])
    agent, _ = make_agent(model, window=None, settings=Settings())
    agent.history.extend([{"role": "user", "content": "old " * 900},
                          {"role": "assistant", "content": "ok " * 900}])
    assert agent.context_state().window_source == "default"
    agent.chat("latest question")
    state = agent.context_state()
    assert (state.window_source, state.thresholds.window.raw_window) == ("learned", 2048)


def test_a_reply_cut_by_the_output_cap_says_so() -> None:
    agent, _ = make_agent(ScriptedModel([reply("the columns are city, mon",
                                               finish_reason="length")]))
    result = agent.chat("list the columns")
    assert result.truncated and result.stop_reason == "done"


@pytest.mark.parametrize(("status", "text", "kind", "hint"), [
    (500, "litellm.InternalServerError: OpenAIException - Missing credentials. Please pass an "
          "`apiKey`, or set the `OPENAI_API_KEY` environment variable.", "auth", "OPENAI_API_KEY"),
    (429, "You exceeded your current quota, please check your plan and billing details. "
          "type: insufficient_quota", "quota", "retrying will not help"),
    (429, "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit "
          "30000, Requested 45000.", "request_too_large", "tokens-per-minute"),
], ids=["missing-key", "quota", "tpm-too-large"])
def test_errors_that_cannot_succeed_are_not_retried_and_say_what_to_do(
        status: int, text: str, kind: str, hint: str) -> None:
    model = ScriptedModel([provider_error(status, text)], name="openai/gpt-4o")
    agent, sleeps = make_agent(model)
    with pytest.raises(ModelCallError) as caught:
        agent.chat("hi")
    assert (caught.value.kind, sleeps, len(model.requests)) == (kind, [], 1)
    assert hint in str(caught.value)


def test_the_embedded_servers_own_failure_passes_through_once_with_its_text() -> None:
    from nbagent import LocalModelError

    stopped = LocalModelError("the local model's server stopped (Connection error.) and "
                              "could not be restarted: port 8765 is taken")
    model = ScriptedModel([stopped], name="local/smollm2")
    agent, sleeps = make_agent(model)
    with pytest.raises(LocalModelError) as caught:
        agent.chat("hi")
    assert caught.value is stopped and (sleeps, len(model.requests)) == ([], 1)
    assert "provider may be down" not in str(caught.value)
    assert agent.history[-1] == {"role": "user", "content": "hi"}
