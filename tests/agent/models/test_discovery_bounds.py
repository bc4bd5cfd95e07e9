"""Discovery is bounded and contained: real hostile services on loopback (one that drips a
byte every 100 ms, one that answers with a 302 to another address, one that never
answers, a proxy named in the environment) and real bad files in a model cache (link
loops, a dangling link, a file whose read fails, a FIFO, truncated and absurd or deeply
nested metadata). Nothing holds the look, nothing leaves loopback, nothing is raised."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import nbagent
from nbagent.agent import models
from nbagent.agent.models import (
    _discovery,
    discover,
    find_gguf_files,
    find_local_models,
    probe_window,
)
from nbagent.testing import ScriptedModel

from .helpers import gguf

# every row discovery probes on a port of its own: a new one meets every hostile service
RUNTIMES = [row.name for row in models.RUNTIMES if row.port is not None]
DRIP_BYTES = 300  # at one byte per 100 ms: a service that would hold a reader for 30 s


class Service:
    """A TCP service on a loopback address that runs `serve` on each connection in its
    own thread; it counts connections and notes when a client hung up on it."""

    def __init__(self, serve: Callable[[socket.socket, Service], None],
                 host: str = "127.0.0.1") -> None:
        self.serve = serve
        self.sock = socket.create_server((host, 0))
        self.url = f"http://{host}:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.hung_up = threading.Event()  # a client closed while we were still talking
        self.finished = threading.Event()  # a drip ran to its end (nobody stopped it)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            self.serve(conn, self)
        except OSError:
            self.hung_up.set()
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


def dripping(where: str) -> Callable[[socket.socket, Service], None]:
    """Answers 200, then drips the rest of the headers (or of the body) a byte at a time."""

    def serve(conn: socket.socket, service: Service) -> None:
        conn.recv(65536)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        if where == "body":
            conn.sendall(head + f"Content-Length: {DRIP_BYTES}\r\n\r\n".encode())
        else:
            conn.sendall(head + b"X-Drip: ")
        for _ in range(DRIP_BYTES):
            conn.sendall(b" ")
            if service.hung_up.wait(0.1):
                return
        service.finished.set()

    return serve


def silent(conn: socket.socket, service: Service) -> None:
    """Accepts, reads the request, never answers; notes when the client gives up."""
    conn.recv(65536)
    if conn.recv(1) == b"":
        service.hung_up.set()


@pytest.fixture()
def services() -> Iterator[Callable[..., list[Service]]]:
    made: list[Service] = []

    def make(serve: Callable[[socket.socket, Service], None], count: int = len(RUNTIMES),
             host: str = "127.0.0.1") -> list[Service]:
        made.extend(Service(serve, host) for _ in range(count))
        return made[-count:]

    yield make
    for service in made:
        service.hung_up.set()  # stop any drip still running
        service.close()


@pytest.mark.parametrize("where", ["headers", "body"])
def test_services_that_drip_a_byte_every_100_ms_cannot_hold_discovery(
        services: Callable[..., list[Service]], where: str) -> None:
    drips = services(dripping(where))
    found = discover(dict(zip(RUNTIMES, (s.url for s in drips), strict=True)), folders=[])
    # the look is over while every service still had most of its 30 s of bytes to send
    assert found == [] and not any(s.finished.is_set() for s in drips)
    assert all(s.connections >= 1 for s in drips)
    assert probe_window(drips[0].url + "/v1", "openai/m") is None
    assert not drips[0].finished.is_set()
    assert all(s.hung_up.wait(10) for s in drips)  # each probe hung up on its service


def test_services_that_never_answer_are_given_up_on(
        services: Callable[..., list[Service]]) -> None:
    hung = services(silent)
    assert discover(dict(zip(RUNTIMES, (s.url for s in hung), strict=True)), folders=[]) == []
    assert all(s.hung_up.wait(10) for s in hung)  # the probe closed each connection


def answering(body: bytes, *headers: str) -> Callable[[socket.socket, Service], None]:
    """Answers every request with 200 and this body (and these extra headers)."""
    def serve(conn: socket.socket, service: Service) -> None:
        conn.recv(65536)
        head = "".join(f"{h}\r\n" for h in headers)
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode()
                     + body)
    return serve


@pytest.mark.parametrize("answer", [
    answering(b"[" * 200_000 + b"]" * 200_000),  # nested past what Python parses
    answering(b"not gzip at all", "Content-Encoding: gzip"),  # a body that cannot decode
    answering(b"\xff\xfe{broken"),
], ids=["deep-json", "bad-encoding", "not-json"])
def test_answers_no_parser_can_use_are_no_models_and_no_error(
        services: Callable[..., list[Service]],
        answer: Callable[[socket.socket, Service], None]) -> None:
    odd = services(answer)
    assert discover(dict(zip(RUNTIMES, (s.url for s in odd), strict=True)), folders=[]) == []
    assert probe_window(odd[0].url + "/v1", "openai/m") is None


class LlamaCppHandler(BaseHTTPRequestHandler):
    """A llama.cpp server that would be found if anyone reached it."""

    requests: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        type(self).requests.append(self.path)
        payload: Any = ({"data": [{"id": "elsewhere"}]} if self.path == "/v1/models"
                        else {"default_generation_settings": {"n_ctx": 65536}})
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def redirecting(to: str) -> type[BaseHTTPRequestHandler]:
    class Redirect(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(302)
            self.send_header("Location", to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET  # noqa: N815

    return Redirect


def serving(host: str, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def test_a_302_to_another_address_is_never_followed() -> None:
    LlamaCppHandler.requests = []
    elsewhere = serving("127.0.0.2", LlamaCppHandler)  # another address of this machine
    target = f"http://127.0.0.2:{elsewhere.server_address[1]}"
    redirect = serving("127.0.0.1", redirecting(target))
    try:
        root = f"http://127.0.0.1:{redirect.server_address[1]}"
        assert discover(dict.fromkeys(RUNTIMES, root), folders=[]) == []
        assert probe_window(root + "/v1", "openai/elsewhere") is None
    finally:
        for server in (redirect, elsewhere):
            server.shutdown()
            server.server_close()
    assert LlamaCppHandler.requests == []  # nothing reached the other address


def test_a_proxy_in_the_environment_never_sees_a_probe(
        services: Callable[..., list[Service]], monkeypatch: pytest.MonkeyPatch) -> None:
    [proxy] = services(silent, count=1)
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    LlamaCppHandler.requests = []
    server = serving("127.0.0.1", LlamaCppHandler)
    try:
        root = f"http://127.0.0.1:{server.server_address[1]}"
        [found] = discover({"llama.cpp server": root}, folders=[], timeout=10)  # it is there
        window = probe_window(root + "/v1", "openai/elsewhere")
    finally:
        server.shutdown()
        server.server_close()
    assert (found.name, found.context_window) == ("elsewhere", 65536)
    assert window is not None and window.window == 65536
    assert proxy.connections == 0


def text(value: str) -> bytes:
    return struct.pack("<Q", len(value.encode())) + value.encode()


def metadata(path: Path, *pairs: bytes, count: int | None = None) -> Path:
    """A GGUF header with these key/value pairs (and a count that may lie)."""
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs) if count is None
                                           else count) + b"".join(pairs))
    return path


@pytest.fixture()
def bad_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Hugging Face cache, holding every kind of bad entry a real cache can hold
    beside one good model; the process's answer from an earlier look is forgotten."""
    hub = tmp_path / "hub"
    hub.mkdir()
    gguf(hub / "good-model-q4_k_m.gguf")
    (hub / "loop-a.gguf").symlink_to(hub / "loop-b.gguf")
    (hub / "loop-b.gguf").symlink_to(hub / "loop-a.gguf")
    (hub / "self.gguf").symlink_to(hub / "self.gguf")
    (hub / "dangling.gguf").symlink_to(tmp_path / "gone.gguf")
    (hub / "folder-loop").symlink_to(hub)
    (hub / "unreadable.gguf").symlink_to("/proc/self/mem")  # a regular file; reading fails
    os.mkfifo(hub / "fifo.gguf")  # opening it would wait for a writer forever
    whole = gguf(tmp_path / "whole.gguf").read_bytes()
    (hub / "truncated.gguf").write_bytes(whole[: len(whole) // 2])
    nested = struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 5_000 + struct.pack("<IQ", 4, 0)
    metadata(hub / "nested.gguf", text("deep") + nested)
    metadata(hub / "many-keys.gguf", count=2**62)
    metadata(hub / "huge-array.gguf", text("a") + struct.pack("<IIQ", 9, 8, 2**62))
    metadata(hub / "huge-string.gguf", text("general.architecture") + struct.pack("<I", 8)
             + struct.pack("<Q", 2**62))
    metadata(hub / "odd-type.gguf", text("x") + struct.pack("<I", 77))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(_discovery, "_found", None)
    return hub


def test_bad_cache_entries_are_skipped_never_raised(bad_hub: Path) -> None:
    found = find_local_models(refresh=True)
    assert [f.name for f in found if not f.running] == ["good-model-q4_k_m.gguf"]


def test_the_first_chat_names_the_good_model_beside_bad_entries(bad_hub: Path) -> None:
    agent = nbagent.Agent(namespace={}, archive=False)  # the embedded default: not started
    notice = agent.take_notice() or ""
    assert "good-model-q4_k_m.gguf" in notice and "configure(model='local'" in notice
    assert nbagent.Agent(model=ScriptedModel(), archive=False).take_notice() is None


def test_the_cache_walk_stops_when_its_time_is_up(tmp_path: Path) -> None:
    gguf(tmp_path / "models" / "a" / "model.gguf")
    assert [f.path.name for f in find_gguf_files([tmp_path / "models"])] == ["model.gguf"]
    assert find_gguf_files([tmp_path / "models"], seconds=0) == []  # no time: no walk
