"""What `ConnectionPool` (`_pool`) does on its loop, seen through `McpServers`, with a
server whose command does not exist: each need tries the start again, the failure is
remembered (the listing says why) and said on the status line, a call gets the reason as
text for the model, and a removed server is forgotten; and a call's time limit, one answer
(`McpServers.call_limit`) that the pool's timeout and the waiting side's backstop both read,
seen with a session stand-in.

Where an MCP test goes. Nothing in tests/agent/mcp speaks MCP to a live server: a test here
uses the SDK's types (`helpers.tool`), a session stand-in (`Session` below) or a process
that fails before MCP is spoken (a missing command, `python -c pass`), and costs
milliseconds. A behaviour test of a live call (a real server answering, timing out, dying,
or a rule reading what its listing says) goes in tests/real/test_mcp*.py, marked `real`:
against the demo server (servers/demo_server.py; tests/real/test_mcp.py pins its exact
tool set, so a tool added to it is added there too), or a small server script the test
writes itself when it needs tools the demo lacks. Not here: an SDK server takes seconds
to start (about 5 s measured on the shared machine), and this folder runs on every change.
Pin the logic here with a stand-in, and the live path once there."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

import mcp_types as types
import pytest

from nbagent.agent.mcp import McpServers
from nbagent.agent.mcp._loop_thread import LoopThread
from nbagent.agent.mcp._pool import not_started, within

T = TypeVar("T")

MISSING = "no-such-mcp-server-xyz"


def test_a_server_that_cannot_start_is_remembered_said_and_answered_as_text() -> None:
    said: list[str] = []
    with McpServers({"gone": {"command": MISSING},
                     "py": {"command": sys.executable, "args": ["-c", "pass"]}},
                    on_status=said.append) as servers:
        answers = [servers.call("gone", "read", {}), servers.call("gone", "read", {})]
        assert answers == [(f"the MCP server 'gone' could not start ({MISSING} was not "
                            "found); it will be tried again on the next call", True)] * 2
        # said once while the reason holds: not a new line for every chat that tries again
        assert said == ["starting MCP server 'gone'…",
                        f"MCP server 'gone' could not start: {MISSING} was not found",
                        "starting MCP server 'gone'…"]
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


class Limits(McpServers):
    """Limits per server, as a later option would give them (both above `call_timeout`'s
    60 s default and below it)."""

    def call_limit(self, server: str) -> float:
        return {"quick": 0.05, "long": 300.0}[server]


class Waits:
    """The real loop, noting how long the waiting side is ready to wait for each run."""

    def __init__(self, loop: LoopThread) -> None:
        self.loop = loop
        self.timeouts: list[float | None] = []

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None,
            **options: Any) -> T:
        self.timeouts.append(timeout)
        return self.loop.run(coroutine, timeout, **options)

    def stop(self) -> None:
        self.loop.stop()


class Session:
    """A live session in place of a server's: it answers at once, or never."""

    alive = True
    tools_changed = False

    def __init__(self, answers: bool) -> None:
        self.answers = answers

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if not self.answers:
            await asyncio.Event().wait()
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

    def stop_soon(self) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(asyncio.sleep(0))

    async def stop(self) -> None:
        pass


def test_a_calls_limit_is_one_answer_the_pool_and_the_waiting_side_both_read() -> None:
    # The pool's timeout and McpServers.call's backstop once read call_timeout each: a
    # longer limit given to the pool alone was cut by the backstop (review 5 measured it).
    with Limits({"quick": {"command": MISSING}, "long": {"command": MISSING}},
                start_timeout=2) as servers:
        waits = Waits(servers._loop)
        servers._loop = waits  # type: ignore[assignment]
        servers._pool.connections.update(quick=Session(answers=False),  # type: ignore[dict-item]
                                         long=Session(answers=True))
        assert servers.call("quick", "wait", {}) == (
            "wait did not finish within 0.05 s; the MCP server 'quick' was stopped and will "
            "be started again on the next call", True)  # the pool's own timeout
        assert servers.call("long", "wait", {}) == ("done", False)
        budget = servers._start_budget()
        assert waits.timeouts == [budget + 0.05, budget + 300.0]  # the backstops follow


def test_the_default_limit_is_the_call_timeout_of_the_moment() -> None:
    with McpServers({"a": {"command": MISSING}}, call_timeout=12) as servers:
        assert servers.call_limit("a") == 12
        servers.call_timeout = 90  # the agent's setting changed: the next call reads it
        assert servers.call_limit("a") == 90


def test_a_calls_limit_does_not_count_the_time_the_user_spends_answering() -> None:
    # a server's request for input is asked mid-call: the user's reading time is not the
    # call's (USER_CLOCK counts it), so a short limit still lets the answered call finish
    import threading

    from nbagent.agent import USER_CLOCK

    async def work() -> str:
        await asyncio.sleep(0.6)
        return "done"

    asking, answered = threading.Event(), threading.Event()

    def answering() -> None:
        with USER_CLOCK.waiting():
            asking.set()
            answered.wait(10)

    loop = LoopThread()
    try:
        with pytest.raises(TimeoutError):
            loop.run(within(work(), 0.3))
        user = threading.Thread(target=answering)
        user.start()
        asking.wait(10)
        try:
            assert loop.run(within(work(), 0.3)) == "done"
        finally:
            answered.set()
            user.join()
    finally:
        loop.stop()
