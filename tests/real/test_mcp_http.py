"""MCP tools over streamable HTTP, against the demo server (the SDK's own server API)
running as a real process on a free 127.0.0.1 port: arguments, headers, errors, an
image, a hung call, the server going away and coming back, and an Agent chat."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from nbagent.mcp import McpServers
from nbagent.testing import ScriptedModel, calls, reply
from tests.agent.mcp.servers.launch import DEMO, free_port, http_demo, listening
from tests.helpers import make_agent, tool_results

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with http_demo() as address:
        yield address


def test_tools_and_calls_over_http_send_the_configured_headers(url: str) -> None:
    with McpServers({"web": {"url": url, "headers": {"X-Team": "analytics"}}}) as servers:
        tools = {t.name: t for t in servers.tools()}
        assert tools["add"].schema["function"]["parameters"]["required"] == ["a"]
        assert tools["add"](a=1, b=5) == "6"
        assert servers.call("web", "header", {"name": "X-Team"}) == ("analytics", False)
        assert servers.call("web", "fail", {}) == ("Error executing tool fail", True)
        assert servers.call("web", "picture", {}) == (
            "[image: image/png, 2.0 KB; not shown to the model]", False)


def test_a_hung_http_call_times_out_and_the_next_call_reconnects(url: str) -> None:
    statuses: list[str] = []
    with McpServers({"web": {"url": url}}, call_timeout=1.5,
                    on_status=statuses.append) as servers:
        text, is_error = servers.call("web", "slow", {"seconds": 20})
        assert is_error and text.startswith("slow did not finish within 1.5 s")
        assert servers.call("web", "add", {"a": 1}) == ("3", False)
        assert statuses == ["starting MCP server 'web'…",
                            "MCP server 'web': slow did not finish within 1.5 s; the server "
                            "was stopped and starts again on the next call",
                            "restarting MCP server 'web'…"]


def test_a_server_that_goes_away_gives_errors_then_works_when_it_is_back() -> None:
    port = free_port()
    address = f"http://127.0.0.1:{port}/mcp"
    statuses: list[str] = []

    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen([sys.executable, str(DEMO), "--http", str(port)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        deadline = time.monotonic() + 30
        while not listening(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        return process

    with McpServers({"web": {"url": address}}, start_timeout=5,
                    on_status=statuses.append) as servers:
        text, is_error = servers.call("web", "add", {"a": 1})  # nothing listens yet
        assert is_error and text.startswith("the MCP server 'web' could not start (")
        process = start()
        try:
            assert servers.call("web", "add", {"a": 1}) == ("3", False)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
            text, is_error = servers.call("web", "add", {"a": 2})
            assert is_error and "'web'" in text and "next call" in text
            process = start()
            assert servers.call("web", "add", {"a": 3}) == ("5", False)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    assert any(s.startswith("MCP server 'web' could not start") for s in statuses)


def test_an_agent_chat_calls_an_http_mcp_tool(url: str) -> None:
    model = ScriptedModel([calls(("add", {"a": 20, "b": 22})), reply("42")])
    agent, _ = make_agent(model)
    with McpServers({"web": {"url": url}}) as servers:
        for made in servers.tools(reserved=agent.tools):
            agent.add_tool(made)
        assert agent.chat("add them").text == "42"
    assert tool_results(agent) == ["42"]
    names = [t["function"]["name"] for t in model.tools_seen[0]]
    assert "add" in names and "list_variables" in names


def test_a_server_on_the_older_sse_transport_works_as_vs_code_reads_it() -> None:
    with http_demo(sse=True) as sse_url, McpServers(
            {"old": {"type": "sse", "url": sse_url, "headers": {"X-Team": "sse"}}}) as servers:
        tools = {t.name: t for t in servers.tools()}
        assert tools["add"](a=1, b=5) == "6"
        assert servers.call("old", "echo", {"text": "hi"})[0].startswith("hi\t")
        assert servers.describe() == [f"old (sse: {sse_url}): running, 9 tools"]


def test_a_server_that_refuses_us_says_so_instead_of_a_vague_error() -> None:
    import http.server
    import threading

    class SignInFirst(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer error="invalid_token", '
                             'resource_metadata="http://127.0.0.1/.well-known/x"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST

        def log_message(self, *args: object) -> None:
            pass

    listener = http.server.HTTPServer(("127.0.0.1", 0), SignInFirst)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    statuses: list[str] = []
    try:
        url = f"http://127.0.0.1:{listener.server_address[1]}/mcp"
        with McpServers({"private": {"url": url}}, on_status=statuses.append) as servers:
            assert servers.tools() == []
            text, is_error = servers.call("private", "anything", {})
    finally:
        listener.shutdown()
    # the sign-in's discovery finds nothing here (every address answers 401)
    failed = [s for s in statuses if s.startswith("MCP server 'private' could not start: the "
                                                   "server answered HTTP 401: it needs sign-in, "
                                                   "and none succeeded (Bearer error=\"invalid_"
                                                   "token\"")]
    assert len(failed) == 1  # the listing and the call failed alike: said once
    assert is_error and "HTTP 401" in text
