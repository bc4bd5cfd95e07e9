"""One session with one MCP server (`mcp/_connection`), where it fails before any MCP is
spoken: a failure's short reason (`failure_text`, from inside anyio's exception groups),
who we say we are (`client_info`), and `Connection.open` against real processes and a
real HTTP refusal on 127.0.0.1: a command that is not there, a server that exits with its
last stderr lines in the reason, one that never answers (cut at the timeout, its process
ended), and a 401 said as such. Live sessions with SDK servers are tests/real/test_mcp*'s
(test_pool's docstring says where an MCP test goes)."""

from __future__ import annotations

import asyncio
import builtins
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.shared.exceptions import MCPError  # noqa: E402 (after the skip)

from nbagent.agent.mcp import HttpServer, StdioServer  # noqa: E402
from nbagent.agent.mcp._connection import Connection, client_info, failure_text  # noqa: E402


def test_a_failure_is_said_in_a_few_words() -> None:
    assert failure_text(MCPError(-32000, "Connection closed")) == (
        "the server closed the connection (it exited?)")
    assert failure_text(MCPError(-32602, "unknown tool: peek")) == "unknown tool: peek"
    assert failure_text(FileNotFoundError(2, "No such file", "npx")) == "npx was not found"
    assert failure_text(FileNotFoundError()) == "the command was not found"
    assert failure_text(TimeoutError()) == "it did not answer in time"
    assert failure_text(ValueError("bad frame\ntraceback...")) == "ValueError: bad frame"
    assert failure_text(ValueError()) == "ValueError"
    if sys.version_info >= (3, 11):  # anyio's groups are the builtin from 3.11
        group = getattr(builtins, "ExceptionGroup")  # noqa: B009 (3.10 has no such name)
        nested = group("outer", [group("inner", [OSError("refused")])])
        assert failure_text(nested) == "OSError: refused"


def test_we_introduce_ourselves_as_nbagent() -> None:
    me = client_info()
    assert (me.name, me.title) == ("nbagent", "nbagent") and me.version


def opened(spec: Any, timeout: float = 10.0) -> tuple[BaseException, str]:
    """What `open` raised for `spec`, and the reports the connection made."""
    reports: list[str] = []

    async def go() -> BaseException:
        connection = Connection("probe", spec, reports.append)
        try:
            await connection.open(timeout)
        except BaseException as error:  # noqa: BLE001 (what the test looks at)
            assert not connection.alive
            return error
        raise AssertionError("it opened")

    return asyncio.run(go()), "\n".join(reports)


def test_a_command_that_is_not_there_is_named() -> None:
    error, _ = opened(StdioServer(command="nbagent-no-such-mcp-server"))
    assert isinstance(error, ConnectionError)
    assert str(error) == "nbagent-no-such-mcp-server was not found"


def test_a_server_that_exits_gives_its_last_words() -> None:
    code = "import sys; sys.stderr.write('boom: missing API key\\n'); sys.exit(3)"
    error, _ = opened(StdioServer(command=sys.executable, args=["-c", code]))
    assert isinstance(error, ConnectionError)
    assert str(error).endswith("(its last output: boom: missing API key)")


# A server that floods stderr and exits at once (1 MB in a pipe grown to hold it, so it
# never waits for the drain): the drain thread still has ~16 reads to do when the client
# sees the process gone.
FLOOD_THEN_EXIT = (
    "import fcntl, os\n"
    "try:\n"
    "    fcntl.fcntl(2, getattr(fcntl, 'F_SETPIPE_SZ', 1031), 1 << 20)\n"
    "except OSError:\n"
    "    pass\n"
    "os.write(2, (b'y' * 1023 + b'\\n') * 1000 + b'boom: missing API key\\n')\n"
    "os._exit(3)\n")


def test_the_last_words_are_read_to_the_end_under_load() -> None:
    """Whoever composes the error waits (bounded) for the drain to reach the end of the
    pipe: here a thread spinning beside it competes for the interpreter, and every start
    still quotes the server's last line, not a line from the middle of its flood."""
    spinning = threading.Event()

    def spin() -> None:
        while not spinning.is_set():
            pass

    busy = threading.Thread(target=spin, daemon=True)
    busy.start()
    try:
        reasons = [str(opened(StdioServer(command=sys.executable,
                                          args=["-c", FLOOD_THEN_EXIT]))[0])
                   for _ in range(8)]
    finally:
        spinning.set()
        busy.join()
    assert all(reason.endswith("y\nboom: missing API key)") for reason in reasons), reasons


def test_a_server_that_never_answers_is_cut_at_the_timeout() -> None:
    started = time.monotonic()
    error, _ = opened(StdioServer(command=sys.executable,
                                  args=["-c", "import time; time.sleep(60)"]), timeout=0.5)
    assert str(error) == "it did not start within 0.5 s"
    assert time.monotonic() - started < 10  # the silent process was stopped, not waited for


class Refusing(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="tools"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_DELETE = do_POST  # noqa: N815


@pytest.fixture
def refusing() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    server.shutdown()
    server.server_close()


def test_an_http_refusal_says_it_needs_sign_in(refusing: str) -> None:
    error, _ = opened(HttpServer(url=refusing, oauth=False))
    assert str(error).startswith("the server answered HTTP 401: it needs sign-in, and none "
                                 'succeeded (Bearer realm="tools")')
