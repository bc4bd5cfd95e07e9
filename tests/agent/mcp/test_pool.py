"""What `ConnectionPool` (`_pool`) does on its loop, seen through `McpServers`, with a
server whose command does not exist: each need tries the start again, the failure is
remembered (the listing says why) and said on the status line, a call gets the reason as
text for the model, and a removed server is forgotten. The live sessions of real servers
are tests/real/test_mcp*.py's."""

from __future__ import annotations

import sys

from nbagent.agent.mcp import McpServers
from nbagent.agent.mcp._pool import not_started

MISSING = "no-such-mcp-server-xyz"


def test_a_server_that_cannot_start_is_remembered_said_and_answered_as_text() -> None:
    said: list[str] = []
    with McpServers({"gone": {"command": MISSING},
                     "py": {"command": sys.executable, "args": ["-c", "pass"]}},
                    on_status=said.append) as servers:
        answers = [servers.call("gone", "read", {}), servers.call("gone", "read", {})]
        assert answers == [(f"the MCP server 'gone' could not start ({MISSING} was not "
                            "found); it will be tried again on the next call", True)] * 2
        assert said == ["starting MCP server 'gone'…",
                        f"MCP server 'gone' could not start: {MISSING} was not found"] * 2
        assert servers.describe()[0] == f"gone (stdio: {MISSING}): failed: {MISSING} was not found"
        servers.remove("gone")
        assert servers.describe() == [f"py (stdio: {sys.executable} -c pass): not started"]
        servers.add("gone", {"command": MISSING})  # a new server of that name: nothing kept
        assert servers.describe()[1] == f"gone (stdio: {MISSING}): not started"


def test_a_start_that_timed_out_gives_its_reason_not_empty_parentheses() -> None:
    # the approval path waits for the start itself: its TimeoutError has no text of its own
    text, is_error = not_started("slow", TimeoutError())
    assert is_error
    assert text == ("the MCP server 'slow' could not start (it did not answer in time); "
                    "it will be tried again on the next call")
