"""A streamed reply read through litellm's real request path from servers on 127.0.0.1:
the same reply as unstreamed (text, tool calls, usage), pieces shown as they come, a
provider's error event and a dropped connection raised as the kinds the loop acts on, and
a streamed call costing at most about twice the unstreamed one (a CPU ratio within one run,
the stub in its own process)."""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent import LiteLLMModel
from nbagent.providers import classify_error
from tests.openai_stub import StubServer

sys.path.insert(0, str(Path(__file__).parents[3] / "bench"))
import turn_cost  # noqa: E402

ASK = [{"role": "user", "content": "Load the file."}]
TOOLS = [{"type": "function", "function": {
    "name": "load", "description": "Load a file.",
    "parameters": {"type": "object", "properties": {"note": {"type": "string"}}}}}]


def without_ids(message: dict[str, Any]) -> dict[str, Any]:
    calls = [{**call, "id": None} for call in message.get("tool_calls", ())]
    return {**message, "tool_calls": calls} if calls else message


def model_at(base_url: str) -> LiteLLMModel:
    return LiteLLMModel("openai/stub", api_base=base_url, api_key="x")


@pytest.mark.parametrize("messages, tools", [
    (ASK, TOOLS),
    (ASK + [{"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "load", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "df: 3 rows, columns a, b"}],
     TOOLS),
], ids=["tool call", "text"])
def test_a_streamed_reply_is_the_unstreamed_reply(messages: list[dict[str, Any]],
                                                  tools: list[dict[str, Any]]) -> None:
    with StubServer() as stub:
        model = model_at(stub.base_url)
        plain = model.send(messages, tools, on_text=None)
        pieces: list[str] = []
        streamed = model.send(messages, tools, on_text=pieces.append)
    assert without_ids(streamed.message) == without_ids(plain.message)
    # the server's own call ids (the stub numbers them by request)
    assert [c["id"] for c in streamed.message.get("tool_calls", ())] == [
        f"call_{len(stub.requests)}"] * len(plain.message.get("tool_calls", ()))
    assert streamed.usage == plain.usage and streamed.usage is not None
    assert streamed.finish_reason == plain.finish_reason
    assert "".join(pieces) == (plain.message["content"] or "")
    assert len(pieces) == len(plain.message["content"] or "") // 5 + (
        1 if len(plain.message["content"] or "") % 5 else 0)


class Broken:
    """A server that streams some text, then an error event or a cut connection."""

    def __init__(self, ending: str) -> None:
        ending_ = ending

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                if not self.path.endswith("/chat/completions"):
                    self.do_GET()
                    return
                head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
                events = [{**head, "choices": [{"index": 0, "delta": {"content": word},
                                                "finish_reason": None}]}
                          for word in ("Reading ", "the ", "file")]
                data = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
                if ending_ == "error":
                    error = {"error": {"message": "This model's maximum context length is 100 "
                                       "tokens. However, you requested 180 tokens.",
                                       "type": "invalid_request_error",
                                       "code": "context_length_exceeded"}}
                    data += f"data: {json.dumps(error)}\n\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                # a cut connection: fewer bytes than announced, then the socket closes
                self.send_header("Content-Length", str(len(data) + (
                    1000 if ending_ == "cut" else 0)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("ending, kind", [("error", "overflow"), ("cut", "transient")],
                         ids=["error event", "cut connection"])
def test_a_stream_that_fails_midway_raises_what_the_loop_acts_on(ending: str,
                                                                 kind: str) -> None:
    pieces: list[str] = []
    with Broken(ending) as base_url, pytest.raises(Exception) as raised:
        model_at(base_url).send(ASK, [], on_text=pieces.append)
    assert classify_error(raised.value) == kind
    assert "".join(pieces) == "Reading the file"  # what came before was shown


@pytest.fixture(scope="module")
def bench_stub() -> Iterator[str]:
    with turn_cost.stub(400) as base_url:
        yield base_url


def test_a_streamed_call_costs_at_most_about_twice_the_unstreamed_one(bench_stub: str) -> None:
    model = model_at(bench_stub)
    pieces: list[str] = []

    def cpu(call: Callable[[], object]) -> float:
        start = time.process_time()
        call()
        time.sleep(0.02)  # what the call left to a background thread is counted too
        return time.process_time() - start

    streamed, plain = [], []
    for _ in range(2):  # warm: litellm's first call imports and caches
        model.send(ASK, [], on_text=None)
        model.send(ASK, [], on_text=pieces.append)
    for _ in range(7):  # interleaved, so a busy moment of the shared machine hits both
        plain.append(cpu(lambda: model.send(ASK, [], on_text=None)))
        streamed.append(cpu(lambda: model.send(ASK, [], on_text=pieces.append)))
    assert len(pieces) == 9 * 400  # it did stream: every piece shown
    ratio = statistics.median(streamed) / statistics.median(plain)
    assert ratio <= 2.5, f"streamed / unstreamed CPU = {ratio:.1f}"


def test_litellm_callbacks_still_see_a_stream(bench_stub: str) -> None:
    """A user's litellm logger gets the streamed reply: the wrapper reads it then."""
    from nbagent.agent.models import litellm

    module = litellm()
    seen: list[Any] = []

    def logged(kwargs: Any, response: Any, start: Any, end: Any) -> None:
        seen.append(response)

    module.success_callback = [logged]
    try:
        pieces: list[str] = []
        completion = model_at(bench_stub).send(ASK, [], on_text=pieces.append)
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:  # litellm logs from a thread
            time.sleep(0.05)
    finally:
        module.success_callback = []
    assert "".join(pieces) == completion.message["content"] and len(pieces) == 400
    assert seen and seen[-1].choices[0].message.content == completion.message["content"]



DATA = st.one_of(st.just("data"), st.builds(lambda space, value: "data:" + space + value,
                                            st.sampled_from(["", " "]),
                                            st.text(st.characters(blacklist_characters="\r\n",
                                                                  blacklist_categories=["Cs"]))))
# no `id:`: httpx-sse keeps the last id and then dispatches a comment's block as an event
# with empty data, which the format does not (and OpenAI's streams carry no ids)
FIELD = st.sampled_from([": keep-alive", "event: message", "retry: 1000"])
EVENT = st.one_of(  # an event with data (and other fields), or a comment alone
    st.builds(lambda lines, last: [*lines, last], st.lists(st.one_of(DATA, FIELD), max_size=3),
              DATA),
    st.just([": ping"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(EVENT, max_size=6), st.sampled_from(["\n", "\r\n", "\r"]), st.data())
def test_events_are_read_as_httpx_sse_reads_them(events: list[list[str]], newline: str,
                                                 data: st.DataObject) -> None:
    """Whatever the line endings and however the bytes arrive (a CRLF split between two
    reads included), each event's data is what httpx-sse, the reference, makes of it."""
    import httpx
    from httpx_sse import EventSource

    from nbagent.agent.models import event_data

    body = "".join(newline.join(event) + newline * 2 for event in events).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    reference = [event.data for event in EventSource(httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=body)).iter_sse()]
    assert [d for batch in event_data(chunks) for d in batch] == reference


@pytest.mark.parametrize("cuts", [[], [130], [60, 130], [272]],
                         ids=["one read", "two reads", "three reads", "done alone"])
def test_each_batch_of_events_is_parsed_once(cuts: list[int],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The events that arrived together are parsed in one `json.loads`, the batch that ends
    the stream (`[DONE]` last) included; what is read is every event before `[DONE]`."""
    import types

    from nbagent.agent.models import _stream

    events = [{"choices": [{"index": 0, "delta": {"content": f"piece {i}"}}]} for i in range(4)]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    body += b"data: [DONE]\n\n"  # (272 bytes before it)
    parses: list[str] = []

    def loads(text: str) -> Any:
        parses.append(text)
        return json.loads(text)

    monkeypatch.setattr(_stream, "json", types.SimpleNamespace(loads=loads))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    batches = list(_stream._batches(chunks))
    assert [event for batch in batches for event in batch] == events
    assert len(parses) == len(batches) == len(list(_stream.event_data(chunks)))
