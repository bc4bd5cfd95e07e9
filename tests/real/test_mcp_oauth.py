"""Signing in to an MCP server that needs it, through the SDK's OAuth support, against a
real server built with the SDK's own authorization server (tests/agent/mcp/servers/
oauth_server.py): discovery, dynamic registration, PKCE, the browser sent to the sign-in
page and back to a one-shot listener on 127.0.0.1, the token used for calls. A browser
stand-in follows the sign-in page's redirect as a browser would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from nbagent.agent.mcp import _oauth
from nbagent.mcp import McpServers
from tests.agent.mcp.servers.launch import DEMO, free_port, listening

pytestmark = pytest.mark.real
SERVER = DEMO.with_name("oauth_server.py")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    import time

    port = free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not listening(port):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


class Browser:
    """What the user's browser does: open the sign-in page (this server approves at once)
    and follow its redirect back to nbagent's listener."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.came_back: list[str] = []

    def __call__(self, page: str) -> None:
        self.opened.append(page)
        back = httpx.get(page, follow_redirects=False, timeout=10).headers["location"]
        self.came_back.append(back)
        assert "signed in" in httpx.get(back, timeout=10).text


def test_a_server_that_needs_sign_in_is_signed_in_to_and_its_tools_work(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    browser = Browser()
    monkeypatch.setattr(_oauth, "OPEN_URL", browser)
    statuses: list[str] = []
    with McpServers({"private": {"url": url}}, on_status=statuses.append) as servers:
        assert [t.name for t in servers.tools()] == ["secret_sum"]
        assert servers.call("private", "secret_sum", {"a": 2, "b": 40}) == ("42", False)
    (page,) = browser.opened
    sign_in = urlparse(page)
    query = parse_qs(sign_in.query)
    assert f"{sign_in.scheme}://{sign_in.netloc}{sign_in.path}" == url.replace("/mcp",
                                                                              "/authorize")
    assert query["code_challenge_method"] == ["S256"] and query["resource"] == [url]
    back = urlparse(browser.came_back[0])
    assert back.hostname == "127.0.0.1" and back.path == "/callback"  # never leaves loopback
    assert query["redirect_uri"] == [f"http://127.0.0.1:{back.port}/callback"]
    # said at once, while the start waits for it (the other lines reach the caller after)
    assert statuses[0] == f"MCP server 'private': needs you to sign in: {page}"
    assert statuses[1] == "starting MCP server 'private'…"


@pytest.mark.parametrize("spec", [{"oauth": False},
                                  {"headers": {"Authorization": "Bearer not-a-valid-token"}}],
                         ids=["oauth-off", "own-token"])
def test_no_sign_in_when_the_spec_says_no_or_brings_its_own_token(
        url: str, monkeypatch: pytest.MonkeyPatch, spec: dict[str, object]) -> None:
    browser = Browser()
    monkeypatch.setattr(_oauth, "OPEN_URL", browser)
    statuses: list[str] = []
    with McpServers({"private": {"url": url, **spec}}, on_status=statuses.append) as servers:
        assert servers.tools() == []
    assert browser.opened == []
    assert statuses[-1].startswith("MCP server 'private' could not start: the server answered "
                                   "HTTP 401: it needs sign-in, and none succeeded")
