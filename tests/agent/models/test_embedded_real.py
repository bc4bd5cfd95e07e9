"""The embedded model on its real server (SmolLM2-135M on llama-cpp-python's server, our
chat handler, litellm's real HTTP path): the server reads the text as written, an answer
streams from its first token with tools offered, and the time bound cuts a reply in one
line with the session intact and the server still serving."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from nbagent import Agent
from nbagent.demo import SYSTEM, sales_tools
from nbagent.local import LocalServer, adapt_messages

pytestmark = [pytest.mark.real, pytest.mark.llama]
TRICKY = "Repeat exactly: it's \"5 < 6 & 7 > 3\" and 'x' <b>"
ENTITY = re.compile(r"&(#\d+|#x[0-9a-f]+|[a-z]+);", re.IGNORECASE)


@pytest.fixture
def server(local_server: LocalServer) -> LocalServer:
    return local_server  # the run's (tests/conftest.py): 2,048 tokens


def test_the_server_reads_the_message_as_written_and_answers_without_entities(
        server: LocalServer) -> None:
    chat = [{"role": "system", "content": "You repeat what you are told."},
            {"role": "user", "content": TRICKY}]
    model = server.model(max_tokens=40)
    reply = model.complete(chat, [], on_text=None)  # unstreamed: the server's own count
    assert server.counter is not None and reply.usage is not None
    exact = server.counter.count_prompt(adapt_messages(chat), [], None)
    escaped = server.counter.count_prompt(
        [{**m, "content": html.escape(m["content"])} for m in chat], [], None)
    assert escaped != exact  # the two renderings differ, so the count tells them apart
    assert reply.usage.input_tokens == exact
    said = reply.message["content"] or ""
    assert said.strip() and not ENTITY.findall(said)


def test_an_answer_streams_from_its_first_token_when_tools_are_offered(
        server: LocalServer) -> None:
    tools = [t.schema for t in sales_tools()]
    model = server.model(max_tokens=40)
    pieces: list[str] = []
    order: list[str] = []

    def piece(text: str) -> None:
        pieces.append(text)
        order.append("piece")

    reply = model.complete([{"role": "system", "content": SYSTEM},
                            {"role": "user", "content": "Hello! How are you?"}], tools,
                           on_text=piece)
    order.append("returned")
    assert not reply.message.get("tool_calls")
    assert len(pieces) > 1 and order[-1] == "returned"  # piece by piece, before the end
    assert "".join(pieces) == reply.message["content"]
    assert not reply.message["content"].startswith("message:")  # the marker is not the answer


def test_each_request_says_how_long_a_prompt_the_server_reads(server: LocalServer) -> None:
    said: list[str] = []
    model = server.model(max_tokens=8)
    model.on_status = said.append
    chat = [{"role": "user", "content": "north grew, south was flat. " * 60 + "Which grew?"}]
    model.complete(chat, [], on_text=lambda _: None)
    assert server.counter is not None
    tokens = server.counter.count_prompt(adapt_messages(chat), [], None)
    assert said == [f"the local model is reading the prompt ({tokens:,} tokens)…"]


def test_the_time_bound_cuts_a_reply_in_one_line_and_the_server_serves_on() -> None:
    with LocalServer(2048, reply_seconds=1.0) as bounded:
        agent = Agent(model=bounded.model(max_tokens=2000), system=SYSTEM, tools=[],
                      builtin_tools=False, namespace={}, archive=False)
        result = agent.chat("Tell me a very long story about a city and its people.")
        assert result.truncated  # the notebook shows one "⋯ continue" line for it
        assert result.text.strip()
        process = bounded.process
        again: Any = agent.chat("And now a short one.")
        assert again.text.strip() and bounded.process is process  # the same server
        assert len([m for m in agent.history if m["role"] == "user"]) == 2


def test_different_questions_about_a_frame_get_different_answers_naming_its_columns() -> None:
    # the embedded default as a newcomer meets it: its decoding, its prompt, the notebook
    # context listing the frame (bench/embedded_answers.py measures ten questions)
    import pandas as pd

    columns = ["harbour", "ship_count", "cargo_tonnes", "delay_hours"]
    ports = pd.DataFrame({"harbour": ["Bergen", "Cork", "Gdansk", "Vigo"] * 5,
                          "ship_count": range(20), "cargo_tonnes": [float(n) for n in range(20)],
                          "delay_hours": [n % 7 for n in range(20)]})
    agent = Agent(namespace={"ports": ports}, archive=False,
                  settings={"local_n_ctx": 2048, "local_max_tokens": 80})
    answers = []
    try:
        for question in ("Which columns does ports have?", "Which column holds the delays?",
                         "How would I find the busiest harbour?",
                         "Which columns of ports are numeric?"):
            agent.new_session(archive=False)
            answers.append(agent.chat(question).text.strip())
        assert len(set(answers)) == len(answers), answers  # no canned sentence
        named = [a for a in answers if any(re.search(rf"\b{c}\b", a) for c in columns)]
        assert len(named) >= len(answers) // 2, answers  # a 135M model: half, at least
        agent.new_session(archive=False)
        agent.configure(run_code="auto")
        agent.chat("Use run_code to print the mean delay_hours of ports.")
        calls = [c["function"]["name"] for m in agent.history.messages
                 for c in m.get("tool_calls") or ()]
        assert "run_code" in calls  # asked for by name, the small model is shown it
    finally:
        running = agent.model.running  # type: ignore[attr-defined]
        if running is not None:
            running.server.release()
