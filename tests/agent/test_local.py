"""End to end against the real embedded model: SmolLM2-135M served by llama.cpp on
127.0.0.1, reached through litellm's real HTTP path: the run's server (`local_server`,
tests/conftest.py, a 2,048-token window), always stopped, even when a test fails. (What needs no server is the modules' own:
tests/agent/models/test_local_model.py, test_local_messages.py, test_chat_format.py.)"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, History, ModelCallError, Settings, Usage, estimate_tokens
from nbagent.agent import DEFAULT_SYSTEM
from nbagent.agent.models import probe_window
from nbagent.agent.tools import OutputStore, Tool, notebook_tools
from nbagent.demo import SYSTEM, sales_tools
from nbagent.engine import TokenTracker
from nbagent.events import MessageAdded
from nbagent.local import LocalModel, LocalServer, gguf_path

real = pytest.mark.real
WINDOW = 2048


@pytest.fixture
def server(local_server: LocalServer) -> LocalServer:
    assert local_server.n_ctx == WINDOW
    return local_server


def agent_on(server: LocalServer, answer_tokens: int = 48, summary_tokens: int = 256,
             system: str = SYSTEM, **options: Any) -> Agent:
    return Agent(model=server.model(max_tokens=answer_tokens),
                 compact_model=server.model(max_tokens=summary_tokens),
                 system=system, tools=sales_tools(), builtin_tools=False, namespace={}, **options)


@real
def test_a_tool_call_round_trip_claims_no_estimate_as_usage(server: LocalServer) -> None:
    agent = agent_on(server)
    streamed: list[str] = []
    result = agent.chat("What is the average revenue?", tool_choice="column_stats",
                        on_text=streamed.append)
    call = agent.history[2]["tool_calls"][0]
    assert call["function"]["name"] == "column_stats"  # a real tool call from the model
    assert agent.history[3]["role"] == "tool" and agent.history[3]["tool_call_id"] == call["id"]
    assert result.rounds == 1 and agent.history[-1]["role"] == "assistant"
    # the chat streams, and the server streams no usage: none is recorded (litellm's
    # tiktoken estimate of the messages is not the server's count)
    assert agent.session.tracker.last_usage is None
    state = agent.context_state()
    assert state.window_source == "server" and state.thresholds.window.raw_window == WINDOW
    assert state.tokens > 0


@real
def test_the_meter_counts_the_embedded_models_next_request_within_5_percent(
        server: LocalServer) -> None:
    agent = agent_on(server)
    agent.chat("What is the average revenue?", tool_choice="column_stats")
    model = agent.model
    assert isinstance(model, LocalModel)
    exact = model.count_request(agent.history.messages, agent.tool_schemas(), "auto")
    assert abs(agent.context_state().tokens - exact) <= 0.05 * exact


@real
def test_a_real_overflow_is_recovered_by_l4_and_the_retry(server: LocalServer) -> None:
    # replies of a few tokens: what overflows is the notes, and every token generated costs
    # the server about twice what one read does
    agent = agent_on(server, answer_tokens=8,
                     settings=Settings(max_context_tokens=4 * WINDOW, local_n_ctx=WINDOW))
    notes = "north grew steadily, south was flat, east peaked in April. " * 80
    recovered = []
    # The first request is short (L4 keeps it whole), each later one adds ~1,070 tokens the
    # agent wrongly thinks it has room for: the third turn's request overflows, and without
    # the second round (L4 drops it) it fits again. The server reads ~2,180 tokens in all,
    # the least that overflows (at ~610 a turn, the first one too, it read ~3,200 in four).
    for turn in range(6):
        asked = f"Question {turn}: which region grew?"
        result = agent.chat(f"{notes} {asked}" if turn else asked, tool_choice="none")
        recovered += [d for d in result.decisions if d.trigger == "overflow"]
        if recovered:
            break
    assert recovered and recovered[0].action == "compacted" and recovered[0].levels == ["L4 overflow"]


@real
def test_an_unrecoverable_overflow_ends_with_the_actionable_message(server: LocalServer) -> None:
    agent = agent_on(server, settings=Settings(max_context_tokens=4 * WINDOW))
    with pytest.raises(ModelCallError) as caught:
        agent.chat("revenue " * 2_500, tool_choice="none")
    assert caught.value.kind == "overflow"  # streamed, yet the server's real error
    assert "agent.compact()" in str(caught.value) and "archive" in str(caught.value)
    assert agent.history[-1]["content"] == "revenue " * 2_500


@real
def test_a_long_session_in_a_2048_window_never_overflows_and_compacts_again(
        server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_LOCAL_N_CTX", str(WINDOW))
    # Replies of 32 tokens (a tool call's fits) and summaries of 128: a token generated costs
    # the server about twice what a token read does, and each question brings ~160 tokens
    # of notes, read twice (the call's prompt shows the tools, the answer's does not).
    # Standing notes in the system prompt (~480 tokens): compaction never edits it, so the
    # server reads it once for each kind of prompt and never again, yet it fills the
    # window like the rest — what each compaction folds, and what the prompts after it
    # read afresh, is that much smaller (the server's CPU 114 s to 93, the same asserts).
    line = "Note: the sales table holds one row per order, by region and month. "
    agent = agent_on(server, answer_tokens=32, summary_tokens=128,
                     system=f"{SYSTEM} {line * 30}")
    notes = line * 10
    questions = ["What columns are there?", "What is the average revenue?",
                 "Which region sold most?", "Show the first rows.", "Stats of units_sold?"]
    compacted: list[Any] = []
    results: list[dict[str, Any]] = []  # the tool results the session's turns produced
    agent.events.subscribe(lambda event: results.append(event.message) if isinstance(
        event, MessageAdded) and event.message.get("role") == "tool" else None)
    # Until the second compaction, within 16 turns: when each lands depends on the model's
    # own replies, which differ between llama.cpp builds. ~300 tokens a turn put the first
    # at turn 5 and the second at turn 6 (the first kept a long verbatim tail); at ~100 a
    # turn, unpadded, they came at turns 16 and 25, for 1.3× the server's CPU (137 s to 103).
    for turn in range(16):
        tool = "column_stats" if turn % 2 else "show_rows"
        agent.chat(f"{notes}Turn {turn}: {questions[turn % len(questions)]}", tool_choice=tool)
        compacted = [d for d in agent.controller.decisions if d.action == "compacted"]
        if len(compacted) >= 2:
            break
    assert len(compacted) >= 2
    # automatic, each with its one summarizer call, and at least one summary the model
    # wrote that the notes check accepted; SmolLM2-135M's summary is now and then rejected
    # (it named nothing from the conversation: seen once in ~7 runs), and the floor stands
    # in for it, as designed — counted against the breaker, which never opens here
    assert all(d.trigger == "auto" and "L2 memory" in d.levels and d.summary_calls == 1
               for d in compacted), [d.reason for d in compacted]
    assert any(not d.degraded for d in compacted), [d.reason for d in compacted]
    assert agent.controller.failure_count() < len(compacted)
    assert not [d for d in agent.controller.decisions if d.trigger == "overflow"]  # never needed
    # the turns' tool rounds went through the compactions (folded or kept whole, never a
    # call left without its result): whether one is still in view at the end depends on
    # where the last compaction cut, which the model's replies move
    assert len(results) >= 2 and not agent.history.pending_tool_calls
    assert agent.context_state().tokens < WINDOW


def cpu_seconds(pid: int) -> float:
    """The server process's CPU time so far (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@real
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_chats_next_turn_reuses_the_prefixes_the_server_evaluated(
        server: LocalServer) -> None:
    """A turn with a tool call makes two requests whose prompts differ from the system
    message on (the call's shows the tools, the answer's does not): each extends its
    counterpart of the turn before, which the server's prompt cache must still hold. The
    second turn, a short question after a long first one, costs the server well under
    the first in CPU. With a row of scores per token kept in each entry, an entry of this
    size outgrew the 256 MiB cache: the two evicted each other and were read whole."""
    assert server.pid is not None
    marks: list[float] = []
    model = server.model(max_tokens=24, on_status=lambda _line: marks.append(
        cpu_seconds(server.pid or 0)))  # a status line before each request
    agent = Agent(model=model, system=SYSTEM, tools=sales_tools(), builtin_tools=False,
                  namespace={})
    notes = "Note: the sales table holds one row per order, by region and month. " * 50
    agent.chat(f"{notes}\nWhat are the first rows?", tool_choice="show_rows")
    agent.chat("And the revenue?", tool_choice="column_stats")
    marks.append(cpu_seconds(server.pid))
    assert len(marks) == 5  # a call and an answer each turn
    first, second = marks[2] - marks[0], marks[4] - marks[2]
    assert second < 0.4 * first, (first, second)


@real
def test_the_estimator_against_the_models_own_tokenizer(server: LocalServer) -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    import corpora

    prose = corpora.english_prose()[:5]
    counted = sum(len(server.tokenize(text)) for text in prose)
    assert abs(sum(map(estimate_tokens, prose)) - counted) / counted < 0.15
    # Digits cost SmolLM2 far more than o200k; one real usage recalibrates the count.
    table = corpora.dataframe_printout()[0]
    history = History([{"role": "user", "content": table}])
    tracker = TokenTracker()
    served = len(server.tokenize(table))
    tracker.record_usage(history, Usage(input_tokens=served), model="local")
    history.append({"role": "user", "content": corpora.dataframe_printout()[1]})
    expected = served + len(server.tokenize(corpora.dataframe_printout()[1]))
    assert abs(tracker.count(history, model="local") - expected) / expected < 0.15


@real
@pytest.mark.llama  # a server of its own
def test_a_gguf_by_path_runs_and_its_server_stops_even_when_the_code_using_it_fails(
        tmp_path: Path) -> None:
    mine = tmp_path / "my-model.gguf"  # any GGUF the user has (NBAGENT_LOCAL_MODEL_PATH)
    mine.symlink_to(gguf_path())
    with pytest.raises(RuntimeError, match="boom"), LocalServer(1024, path=mine) as running:
        process = running.process
        assert process is not None and process.poll() is None
        model = running.model(max_tokens=4)
        assert model.name == "openai/local-my-model" and model.context_window == 1024
        assert model.calls_tools_itself  # a ChatML template: real tool calls
        reply = model.complete([{"role": "user", "content": "Hi"}], [], on_text=None)
        assert reply.finish_reason in ("stop", "length") and reply.usage is not None
        raise RuntimeError("boom")
    assert process.poll() is not None


@real
def test_the_count_matches_the_servers_own_over_several_turns(server: LocalServer) -> None:
    namespace = {"sales": {"city": ["Oslo", "Rome"], "visitors": [5120, 9800]}, "rate": 0.25}
    tools = {t.name: t for t in notebook_tools(namespace, OutputStore())}
    schemas = [t.schema for t in tools.values()]
    model = server.model(max_tokens=24)
    # every tool shown: no agent told this model which are the built-ins (it hides them
    # unless named); this is about the server's count of tool rounds, not about which it is shown
    messages: list[dict[str, Any]] = [{"role": "system", "content": DEFAULT_SYSTEM}]
    requests = 0
    for question in ["What variables do I have?", "Hello!", "Which city had more visitors?"]:
        messages.append({"role": "user", "content": question})
        for _ in range(2):  # a round of tool calls, then the answer
            counted = model.count_request(messages, schemas)
            completion = model.complete(messages, schemas, on_text=None)
            assert completion.usage is not None  # not streamed: the server's own count
            served = completion.usage.input_tokens
            assert abs(counted - served) <= 0.05 * served, (question, counted, served)
            requests += 1
            messages.append(completion.message)
            calls = completion.message.get("tool_calls") or []
            for call in calls:
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": run(tools, call)})
            if not calls:
                break
    assert requests >= 4 and any(m["role"] == "tool" for m in messages)


def run(tools: dict[str, Tool], call: dict[str, Any]) -> str:
    try:
        return str(tools[call["function"]["name"]](**json.loads(call["function"]["arguments"])))
    except Exception as error:  # a 135M model's arguments are not always right
        return f"error: {error}"


@real
def test_a_data_question_gets_a_tool_call_and_a_greeting_an_answer(server: LocalServer) -> None:
    tools = [t.schema for t in notebook_tools({}, OutputStore())]
    model = server.model(max_tokens=24)
    # every tool shown: no agent told this model which are the built-ins (it hides them
    # unless named); this is about the server's tool-call grammar, not about which it is shown
    ask = [{"role": "system", "content": DEFAULT_SYSTEM},
           {"role": "user", "content": "What columns does df have?"}]
    looked = model.complete(ask, tools, on_text=None)
    assert looked.message["tool_calls"][0]["function"]["name"] in ("list_variables",
                                                                   "describe_variable")
    pieces: list[str] = []
    greeted = model.complete([ask[0], {"role": "user", "content": "Hello! How are you?"}], tools,
                             on_text=pieces.append)
    assert not greeted.message.get("tool_calls") and greeted.message["content"].strip()
    assert "".join(pieces) == greeted.message["content"]  # streamed as it came
    assert greeted.usage is None  # one streamed request (no unstreamed decision): the
    # server counts nothing in a stream; the agent counts the request itself


@real
def test_a_streamed_reply_stops_at_the_cap_and_claims_no_usage(server: LocalServer) -> None:
    model = server.model(max_tokens=6)
    pieces: list[str] = []
    reply = model.complete([{"role": "user", "content": "Tell me a long story about a city."}],
                           [], on_text=pieces.append)
    assert reply.finish_reason == "length"  # how the loop tells a reply was cut
    assert len(pieces) > 1 and reply.usage is None  # the server streams none; no estimate
    whole = model.complete([{"role": "user", "content": "Tell me a long story about a city."}],
                           [], on_text=None)
    assert whole.finish_reason == "length" and whole.usage is not None
    assert whole.usage.output_tokens == 6


@real
def test_a_streamed_request_too_long_gets_the_servers_own_error(server: LocalServer) -> None:
    model = server.model(max_tokens=8)
    too_long = [{"role": "user", "content": "revenue " * 2_500}]
    assert model.count_request(too_long) > WINDOW
    with pytest.raises(Exception, match="maximum context length is 2048") as caught:
        model.complete(too_long, [], on_text=lambda text: None)  # not an empty "answer"
    assert type(caught.value).__name__ == "ContextWindowExceededError"


@real
def test_the_embedded_server_carries_its_window_itself(server: LocalServer) -> None:
    model = server.model()
    assert (model.context_window, model.max_output) == (WINDOW, 512)
    # llama-cpp-python's server has no /props and lists no n_ctx: it is recognised by its
    # listing and only its default n_ctx can be assumed (the model object knows the real one)
    found = probe_window(server.base_url, model.name)
    assert found is not None and (found.window, found.assumed) == (2048, True)


@real
@pytest.mark.llama  # the demo starts its own server
def test_the_readmes_main_job_runs_with_the_real_model() -> None:
    import subprocess

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = subprocess.run([sys.executable, "-m", "nbagent.demo"], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "SmolLM2-135M on llama.cpp, window 2,048 tokens" in text
    assert "compacted at the auto-compact trigger (" in text and "compacted on request (" in text
    assert 'compacted after the server\'s "prompt too long" (' in text  # a real one, recovered
    assert "% context left" in text and "→ show_rows(" in text
    assert "(learned: the limit the server showed" in text  # the window it recovered to
    # its last line: what compacted, and no summary that failed or fell back to the floor
    assert re.search(r"\ncompactions: \{'auto': [1-9]\d*, 'midloop': \d+, 'manual': 1, "
                     r"'overflow': [1-9]\d*\}; failures now 0\n", text), text[-600:]
