"""Bounded JSON requests (`models/_probe_http`), each against a real server on 127.0.0.1:
one total deadline (a server that stalls after its headers is cut off at it), at most
`max_bytes` read, no redirect followed, a non-2xx or non-JSON answer is None, nothing
listening is `Unreachable`; `run_bounded` and `gather_bounded` give the fallback for a
job that hangs or raises without holding the others. Discovery's own hostile services
are tests/agent/models/test_discovery_bounds.py's."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from nbagent.agent.models._probe_http import (
    Deadline,
    Unreachable,
    client,
    gather_bounded,
    get_json,
    run_bounded,
)

BIG = 5_000


class Handler(BaseHTTPRequestHandler):
    """`/json`: a small JSON answer (POST: the body echoed); `/big`: BIG bytes of JSON;
    `/stall`: headers, then a byte every 50 ms; `/text`: not JSON; `/moved`: a 302 to
    `/json`; `/missing`: a 404."""

    def log_message(self, *args: Any) -> None:
        pass

    def answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path == "/json":
            self.answer(200, b'{"n_ctx": 8192}')
        elif self.path == "/big":
            self.answer(200, json.dumps("x" * BIG).encode())
        elif self.path == "/text":
            self.answer(200, b"<html>not json</html>")
        elif self.path == "/moved":
            self.answer(302, b"", {"Location": "/json"})
        elif self.path == "/stall":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:  # the client gave up: what the test wants
                pass
        else:
            self.answer(404, b'{"error": "no"}')

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.answer(200, json.dumps({"asked": json.loads(body)}).encode())


@pytest.fixture(scope="module")
def root() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def ask(url: str, seconds: float = 2.0, body: dict[str, Any] | None = None,
        max_bytes: int = 2_000_000) -> Any:
    async def go() -> Any:
        async with client() as http:
            return await get_json(http, url, Deadline(seconds), body, max_bytes=max_bytes)

    return asyncio.run(go())


def test_json_is_read_and_a_body_is_posted(root: str) -> None:
    assert ask(f"{root}/json") == {"n_ctx": 8192}
    assert ask(f"{root}/json", body={"model": "llama3"}) == {"asked": {"model": "llama3"}}


def test_an_answer_over_max_bytes_is_none(root: str) -> None:
    assert ask(f"{root}/big", max_bytes=BIG + 100) == "x" * BIG
    assert ask(f"{root}/big", max_bytes=BIG // 2) is None


def test_non_json_a_redirect_and_a_404_are_none(root: str) -> None:
    assert ask(f"{root}/text") is None
    assert ask(f"{root}/moved") is None  # never followed to /json
    assert ask(f"{root}/missing") is None


def test_a_server_that_stalls_is_cut_off_at_the_deadline(root: str) -> None:
    started = time.monotonic()
    with pytest.raises(Unreachable):
        ask(f"{root}/stall", seconds=0.4)
    assert time.monotonic() - started < 2.0  # it would drip for 5 s


def test_nothing_listening_and_a_spent_deadline_are_unreachable() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(Unreachable):
        ask(f"http://127.0.0.1:{port}/json")
    with pytest.raises(Unreachable):
        ask(f"http://127.0.0.1:{port}/json", seconds=-1)


def test_a_deadline_gives_each_request_what_is_left_at_most_its_share() -> None:
    assert 9.0 < Deadline(10).left() <= 10
    assert Deadline(10, per_request=1.5).left() == 1.5
    assert Deadline(0.5, per_request=1.5).left() <= 0.5


def test_run_bounded_answers_or_falls_back_on_a_hang_or_an_error() -> None:
    async def answer() -> str:
        return "answered"

    async def hang() -> str:
        await asyncio.sleep(30)
        return "never"

    async def fail() -> str:
        raise ValueError("strange server")

    assert run_bounded(answer, 1.0, "fallback") == "answered"
    started = time.monotonic()
    assert run_bounded(hang, 0.2, "fallback") == "fallback"
    assert time.monotonic() - started < 1.5
    assert run_bounded(fail, 1.0, "fallback") == "fallback"


def test_gather_bounded_keeps_each_answer_and_one_hang_costs_no_other() -> None:
    async def after(seconds: float, value: str) -> str:
        await asyncio.sleep(seconds)
        return value

    async def fail() -> str:
        raise OSError("refused")

    started = time.monotonic()
    answers = asyncio.run(gather_bounded([after(0, "a"), after(30, "hung"), fail(),
                                          after(0.05, "b")], 0.3, "-"))
    assert answers == ["a", "-", "-", "b"]
    assert time.monotonic() - started < 1.5
