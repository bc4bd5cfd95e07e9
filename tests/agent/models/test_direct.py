"""The direct path (`models/_direct`): a streamed chat posts the body `litellm.completion`
posts for the same request — tools, tool choice, cache marks and key included — for OpenAI,
a server of one's own and the providers it leaves to litellm (Anthropic, Gemini); and it
steps aside for what litellm's wrapper must see. Both go to one recorder on 127.0.0.1."""

from __future__ import annotations

import gc
import json
import threading
import weakref
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nbagent import LiteLLMModel
from nbagent.agent.models._direct import direct_route
from nbagent.agent.models._litellm import litellm
from nbagent.agent.providers import CachePlan

TOOL = {"type": "function", "function": {
    "name": "peek", "description": "Show the first rows of a table.",
    "parameters": {"type": "object", "properties": {"name": {"type": "string"}},
                   "required": ["name"]}}}
SYSTEM = "You help a data scientist in a Jupyter notebook. " * 60
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Which region leads?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "peek", "arguments": '{"name": "sales"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "region,revenue\nr1,10\n" * 40},
    {"role": "assistant", "content": "r1 leads."},
    # a mark of the caller's own (a server that reads Anthropic's marks keeps it)
    {"role": "user", "content": [{"type": "text", "text": "And by month?",
                                  "cache_control": {"type": "ephemeral"}}]},
]
PLAN = CachePlan(stable=len(HISTORY) - 1, prefix_tokens=[1500, 1510, 1530, 2400, 2410, 2420],
                 key="nbagent-session-1")


class Recorder:
    """Records every POST (path and JSON body, and the body's bytes in `raw`) and answers
    400, as a provider refusing it would: only the body matters here."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any]]] = []
        self.raw: list[bytes] = []
        self.types: list[str | None] = []  # each POST's Content-Type
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                recorder.posts.append((self.path.split("?")[0], json.loads(body)))
                recorder.raw.append(body)
                recorder.types.append(self.headers.get("Content-Type"))
                data = b'{"error": {"message": "recorded", "type": "invalid_request_error"}}'
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_port}"


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    recorder = Recorder()
    yield recorder
    recorder.server.shutdown()
    recorder.server.server_close()


# (model, the base under the recorder, whether the direct path takes it)
CASES = [
    ("openai/gpt-4o-mini", "/v1", True),            # OpenAI's own: the session key, no marks
    ("openai/qwen2.5-coder-local", "/v1", True),     # a server of one's own: its marks kept
    ("anthropic/claude-sonnet-4-5", "", False),      # breakpoints; litellm.completion sends
    ("gemini/gemini-2.0-flash", "/v1beta", False),   # not marked; litellm.completion sends
]


def posted(recorder: Recorder, call: Any) -> tuple[str, dict[str, Any]]:
    before = len(recorder.posts)
    with pytest.raises(Exception, match="recorded"):
        call()
    [post] = recorder.posts[before:]
    return post


@pytest.mark.parametrize(("name", "under", "direct"), CASES, ids=[c[0] for c in CASES])
def test_a_streamed_chat_posts_the_body_litellm_completion_posts(
        recorder: Recorder, name: str, under: str, direct: bool) -> None:
    model = LiteLLMModel(name, api_base=recorder.base_url + under, api_key="sk-test-not-real",
                         options={"temperature": 0.25, "max_tokens": 300})
    module = litellm()

    def request() -> dict[str, Any]:  # a fresh copy each time: litellm edits messages
        return model.request(json.loads(json.dumps(HISTORY)), [TOOL], tool_choice="auto",
                             plan=PLAN)

    assert (direct_route(module, request()) is not None) is direct
    path, body = posted(recorder, lambda: model.send(
        json.loads(json.dumps(HISTORY)), [TOOL], on_text=lambda text: None,
        tool_choice="auto", plan=PLAN))
    litellm_path, litellm_body = posted(recorder, lambda: list(module.completion(
        **request(), stream=True, stream_options={"include_usage": True})))
    assert path == litellm_path
    assert json.dumps(body) == json.dumps(litellm_body)  # the same keys in the same order
    assert "peek" in json.dumps(body)  # the tool went
    if name.startswith("openai/"):
        assert body["stream"] is True and body["tool_choice"] == "auto"
        # OpenAI's own are given the session's key; litellm keeps the caller's marks for
        # a base that is not OpenAI's
        assert ("prompt_cache_key" in body) is name.startswith("openai/gpt")
        assert body["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    if name.startswith("anthropic/"):
        assert "cache_control" in json.dumps(body["system"])


def test_a_long_history_posts_the_bytes_litellm_completion_posts_request_after_request(
        recorder: Recorder) -> None:
    """Each message's JSON is kept from one request to the next (`_Encoder`): the body
    stays litellm.completion's, byte for byte, as the history grows, as a message it kept
    changes in place, and for messages it does not keep (tool calls, parts, a number)."""
    from nbagent.agent.models import _direct

    model = LiteLLMModel("openai/qwen2.5-coder-local", api_base=recorder.base_url + "/v1",
                         api_key="sk-test-not-real", options={"temperature": 0.25})
    module = litellm()
    history = json.loads(json.dumps(HISTORY))
    history += [{"role": "user", "content": "Plot it — «par mois», 月ごと 📈"},
                {"role": "assistant", "content": "Done:\n```python\ndf.plot()\n```",
                 "name": None},
                {"role": "user", "content": _direct._Encoder.MARK + " the mark's own text"},
                {"role": "assistant", "content": "ok", "weight": 1}]

    def both(messages: list[dict[str, Any]]) -> tuple[bytes, bytes]:
        before = len(recorder.raw)
        posted(recorder, lambda: model.send(json.loads(json.dumps(messages)), [TOOL],
                                            on_text=lambda text: None, plan=PLAN))
        posted(recorder, lambda: list(module.completion(
            **model.request(json.loads(json.dumps(messages)), [TOOL], plan=PLAN),
            stream=True, stream_options={"include_usage": True})))
        ours, theirs = recorder.raw[before:]
        # posted as bytes, the body is still declared JSON, as litellm declares it
        assert recorder.types[before:] == ["application/json"] * 2
        return ours, theirs

    encoder = _direct._encoder()
    assert encoder is not None  # this SDK takes a body's bytes
    for turn in range(3):
        history += [{"role": "user", "content": f"Question {turn}: and the median?"},
                    {"role": "assistant", "content": f"The median is {turn}.5."}]
        ours, theirs = both(history)
        assert ours == theirs
        assert encoder.kept  # the next request reuses the messages' bytes
    history[1]["content"] = "Which region leads, by revenue?"  # a kept message, changed
    history[9]["weight"] = True  # equal to 1 as a field, but not the same JSON
    ours, theirs = both(history)
    assert ours == theirs and b"by revenue?" in ours and b'"weight":true' in ours


def test_a_server_named_in_the_environment_gets_the_body_litellm_completion_posts(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_API_BASE names the server (as a user of an OpenAI-compatible one sets it)."""
    monkeypatch.setenv("OPENAI_API_BASE", recorder.base_url + "/v1")
    model = LiteLLMModel("openai/qwen2.5-coder-local", api_key="sk-test-not-real")
    module = litellm()
    request = model.request(json.loads(json.dumps(HISTORY)), [TOOL], plan=PLAN)
    assert direct_route(module, request) is not None
    ours = posted(recorder, lambda: model.send(json.loads(json.dumps(HISTORY)), [TOOL],
                                               on_text=lambda text: None, plan=PLAN))
    theirs = posted(recorder, lambda: list(module.completion(
        **model.request(json.loads(json.dumps(HISTORY)), [TOOL], plan=PLAN), stream=True,
        stream_options={"include_usage": True})))
    assert json.dumps(ours) == json.dumps(theirs)


def test_litellm_callbacks_or_an_option_it_does_not_map_send_through_litellm_completion(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    module = litellm()
    model = LiteLLMModel("openai/gpt-4o-mini", api_base=recorder.base_url + "/v1",
                         api_key="sk-test-not-real")
    request = model.request([{"role": "user", "content": "hi"}], [])
    assert direct_route(module, request) is not None
    assert direct_route(module, {**request, "response_format": {"type": "json_object"}}) is None
    assert direct_route(module, {**request, "model": "anthropic/claude-sonnet-4-5"}) is None
    # litellm's own "cache" entry (its Gemini module adds it at import) is no callback
    monkeypatch.setattr(module, "success_callback", ["cache"])
    assert direct_route(module, request) is not None
    monkeypatch.setattr(module, "success_callback", ["cache", lambda *args: None])
    assert direct_route(module, request) is None
    signed = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1__thought__c2ln", "type": "function",
         "function": {"name": "peek", "arguments": "{}"}}]}]
    monkeypatch.setattr(module, "success_callback", [])
    assert direct_route(module, {**request, "messages": signed}) is None
    monkeypatch.setattr(module, "client_session", object())  # the HTTP client it sends on
    assert direct_route(module, request) is None


@pytest.mark.parametrize("name", ["openai/gpt-4o-mini", "openai/qwen2.5-coder-local"])
def test_a_reply_in_one_piece_posts_the_body_litellm_completion_posts(
        recorder: Recorder, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction's summary (no `on_text`) takes the direct path too: the body is
    litellm.completion's unstreamed one, and litellm.completion is not called."""
    model = LiteLLMModel(name, api_base=recorder.base_url + "/v1", api_key="sk-test-not-real",
                         options={"temperature": 0.25, "max_tokens": 300})
    module = litellm()
    theirs = posted(recorder, lambda: module.completion(**model.request(
        json.loads(json.dumps(HISTORY)), [TOOL], tool_choice="auto", plan=PLAN)))

    def refused(**kwargs: Any) -> None:
        raise AssertionError("litellm.completion called")

    monkeypatch.setattr(module, "completion", refused)
    ours = posted(recorder, lambda: model.send(json.loads(json.dumps(HISTORY)), [TOOL],
                                               on_text=None, tool_choice="auto", plan=PLAN))
    assert json.dumps(ours) == json.dumps(theirs) and "stream" not in ours[1]


def test_a_direct_streams_request_is_freed_when_its_reply_is_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without waiting for Python's cycle collector: the SDK's own stream object holds
    itself through its event generator, which kept each request's body alive for dozens
    of turns."""
    from nbagent.agent.models import _direct
    from tests.openai_stub import StubServer

    handed: list[weakref.ref[Any]] = []
    read = _direct.read_events

    def recording(module: Any, raw: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(weakref.ref(raw.response.request))
        return read(module, raw, *args, **kwargs)

    monkeypatch.setattr(_direct, "read_events", recording)
    with StubServer() as server:
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=server.base_url,
                             api_key="sk-test-not-real")
        gc.disable()
        try:
            pieces: list[str] = []
            done = model.send([{"role": "user", "content": "hello there"}], [],
                              on_text=pieces.append)
            assert done.message["content"] == "I see: hello there" == "".join(pieces)
            [request] = handed
            assert request() is None
        finally:
            gc.enable()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by itself, and its key: a server of one's own."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(
            ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256()))
    cert, private = folder / "server.pem", folder / "server.key"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return cert, private


def test_a_direct_request_goes_out_on_litellms_ssl_settings(
        recorder: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server of one's own over HTTPS with its own certificate, trusted through
    `litellm.ssl_verify`: the direct path reaches it as litellm.completion does (on the
    HTTP client litellm gives the openai SDK, whose SSL context litellm made once)."""
    import ssl

    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    recorder.server.socket = context.wrap_socket(recorder.server.socket, server_side=True)
    base = recorder.base_url.replace("http://", "https://") + "/v1"
    module = litellm()
    monkeypatch.setattr(module, "ssl_verify", str(cert))
    model = LiteLLMModel("openai/qwen2.5-coder-local", api_base=base, api_key="sk-test-not-real")
    request = model.request([{"role": "user", "content": "hi"}], [])
    assert direct_route(module, request) is not None
    theirs = posted(recorder, lambda: list(module.completion(
        **request, stream=True, stream_options={"include_usage": True})))
    ours = posted(recorder, lambda: model.send([{"role": "user", "content": "hi"}], [],
                                               on_text=lambda text: None))
    assert json.dumps(ours) == json.dumps(theirs)
