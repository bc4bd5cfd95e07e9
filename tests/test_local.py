"""End to end against the real embedded model: SmolLM2-135M served by llama.cpp on
127.0.0.1, reached through litellm's real HTTP path. The server is started here and
always stopped, even when a test fails."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, History, ModelCallError, Settings, TokenTracker, Usage, estimate_tokens
from nbagent.demo import SYSTEM, sales_tools
from nbagent.local import LocalServer, adapt_messages

pytestmark = pytest.mark.real
WINDOW = 2048


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer(WINDOW) as running:
        yield running


def agent_on(server: LocalServer, **options: Any) -> Agent:
    return Agent(model=server.model(max_tokens=48), compact_model=server.model(max_tokens=256),
                 system=SYSTEM, tools=sales_tools(), builtin_tools=False, namespace={}, **options)


def test_a_tool_call_round_trip_with_real_usage(server: LocalServer) -> None:
    agent = agent_on(server)
    result = agent.chat("What is the average revenue?", tool_choice="column_stats")
    call = agent.history[2]["tool_calls"][0]
    assert call["function"]["name"] == "column_stats"  # a real tool call from the model
    assert agent.history[3]["role"] == "tool" and agent.history[3]["tool_call_id"] == call["id"]
    assert result.rounds == 1 and agent.history[-1]["role"] == "assistant"
    reported = agent.tracker.last_usage
    assert reported is not None and reported > 100
    state = agent.context_state()
    assert state.window_source == "server" and state.thresholds.window.raw_window == WINDOW
    reply = agent.history.message_tokens(len(agent.history) - 1)
    assert reported <= state.tokens <= reported + 3 * reply + 20  # usage + the reply, estimated


def test_a_real_overflow_is_recovered_by_l4_and_the_retry(server: LocalServer) -> None:
    agent = agent_on(server, settings=Settings(max_context_tokens=4 * WINDOW, local_n_ctx=WINDOW))
    notes = "north grew steadily, south was flat, east peaked in April. " * 45
    recovered = []
    for turn in range(6):  # each turn adds ~700 tokens the agent wrongly thinks it has room for
        result = agent.chat(f"{notes} Question {turn}: which region grew?", tool_choice="none")
        recovered += [d for d in result.decisions if d.trigger == "overflow"]
        if recovered:
            break
    assert recovered and recovered[0].action == "compacted" and recovered[0].levels == ["L4 overflow"]


def test_an_unrecoverable_overflow_ends_with_the_actionable_message(server: LocalServer) -> None:
    agent = agent_on(server, settings=Settings(max_context_tokens=4 * WINDOW))
    with pytest.raises(ModelCallError) as caught:
        agent.chat("revenue " * 2_500, tool_choice="none")
    assert caught.value.kind == "overflow"
    assert "%compact" in str(caught.value) and "Nothing was lost" in str(caught.value)
    assert agent.history[-1]["content"] == "revenue " * 2_500


def test_fifteen_turns_in_a_2048_window_never_overflow_and_compact(server: LocalServer,
                                                                   monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    monkeypatch.setenv("NBAGENT_LOCAL_N_CTX", str(WINDOW))
    agent = agent_on(server)
    questions = ["What columns are there?", "What is the average revenue?",
                 "Which region sold most?", "Show the first rows.", "Stats of units_sold?"]
    for turn in range(15):
        tool = "column_stats" if turn % 2 else "show_rows"
        agent.chat(f"Turn {turn}: {questions[turn % len(questions)]}", tool_choice=tool)
    compacted = [d for d in agent.controller.decisions if d.action == "compacted"]
    assert len(compacted) >= 2
    assert sum(m["role"] == "tool" for m in agent.history) >= 1
    assert agent.context_state().tokens < WINDOW


def test_the_estimator_against_the_models_own_tokenizer(server: LocalServer) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
    import corpora

    prose = corpora.english_prose()[:5]
    real = sum(len(server.tokenize(text)) for text in prose)
    assert abs(sum(map(estimate_tokens, prose)) - real) / real < 0.15
    # Digits cost SmolLM2 far more than o200k; one real usage recalibrates the count.
    table = corpora.dataframe_printout()[0]
    history = History([{"role": "user", "content": table}])
    tracker = TokenTracker()
    served = len(server.tokenize(table))
    tracker.record_usage(history, Usage(input_tokens=served), model="local")
    history.append({"role": "user", "content": corpora.dataframe_printout()[1]})
    expected = served + len(server.tokenize(corpora.dataframe_printout()[1]))
    assert abs(tracker.count(history, model="local") - expected) / expected < 0.15


def test_tool_results_reach_the_model_through_its_chat_template() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "show_rows", "arguments": "{}"}}
    adapted = adapt_messages([{"role": "user", "content": "rows?"},
                              {"role": "assistant", "content": None, "tool_calls": [call]},
                              {"role": "tool", "tool_call_id": "c1", "content": "region month"}])
    assert adapted[1]["content"] == "" and adapted[2] == {
        "role": "user", "content": "Result of show_rows:\nregion month"}


def test_the_server_is_stopped_even_when_the_code_using_it_fails() -> None:
    with pytest.raises(RuntimeError, match="boom"), LocalServer(1024) as running:
        process = running.process
        assert process is not None and process.poll() is None
        raise RuntimeError("boom")
    assert process.poll() is not None


def test_the_readmes_main_job_runs_with_the_real_model() -> None:
    import subprocess

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = subprocess.run([sys.executable, "-m", "nbagent.demo"], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "SmolLM2-135M on llama.cpp, window 2,048 tokens" in text
    assert "auto compaction compacted" in text and "manual compaction compacted" in text
    assert "overflow compaction compacted" in text  # a real "prompt too long", recovered
    assert "% left" in text and "→ show_rows(" in text
