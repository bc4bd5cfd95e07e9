"""MCP tools against real server processes over stdio, written with the SDK's own server
API (tests/agent/mcp/servers/demo_server.py): arguments, a failing tool, an image, a hung
tool, a server that dies mid-call or cannot start, the processes' lifetime (close, exit,
a killed kernel), calls from threads and under a running loop, and an Agent chat.

The tests that only call the server share one for the module (`shared`: each start costs
the server the SDK's import, ~1 CPU-s); a test that hangs, kills, closes or restarts its
server starts its own (`servers`)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from nbagent.mcp import McpServers
from nbagent.testing import ScriptedModel, calls, reply
from tests.agent.mcp.servers.launch import DEMO, alive, stdio_spec, wait_gone
from tests.helpers import make_agent, tool_results

pytestmark = pytest.mark.real


@pytest.fixture
def statuses() -> list[str]:
    return []


@pytest.fixture
def servers(statuses: list[str]) -> Iterator[McpServers]:
    made = McpServers({"demo": stdio_spec()}, call_timeout=20, on_status=statuses.append)
    yield made
    made.close()


@pytest.fixture(scope="module")
def shared_statuses() -> list[str]:
    return []


@pytest.fixture(scope="module")
def shared(shared_statuses: list[str]) -> Iterator[McpServers]:
    """One demo server for the module's tests that leave it as it was: every line it said
    is in `shared_statuses`."""
    with McpServers({"demo": stdio_spec()}, call_timeout=20,
                    on_status=shared_statuses.append) as made:
        yield made


def server_pid(servers: McpServers, name: str = "demo") -> int:
    text, is_error = servers.call(name, "pid", {})
    assert not is_error, text
    return int(text)


def test_tools_are_listed_with_the_servers_schemas_and_called_with_arguments(
        shared: McpServers, shared_statuses: list[str]) -> None:
    tools = {t.name: t for t in shared.tools()}
    assert set(tools) == {"add", "echo", "slow", "fail", "pid", "die", "header", "picture",
                           "report"}
    assert tools["add"].schema["function"]["parameters"] == {
        "type": "object", "required": ["a"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 2}}}
    assert tools["add"](a=40) == "42" and tools["add"](a=1, b=5) == "6"
    # started once, whichever of the module's tests came first, and nothing else said
    assert shared_statuses == ["starting MCP server 'demo'…"]


def test_a_failing_tool_an_image_and_resources_come_back_as_text(shared: McpServers) -> None:
    assert shared.call("demo", "fail", {"reason": "no such table"}) == (
        "Error executing tool fail", True)
    assert shared.call("demo", "picture", {}) == (
        "[image: image/png, 2.0 KB; not shown to the model]", False)
    text, is_error = shared.call("demo", "report", {})
    assert not is_error and text.splitlines() == [
        "see the attached report", "[resource file:///tmp/report.txt (text/plain)]",
        "all rows valid", "[resource link file:///tmp/data.csv (data.csv, text/csv, 1,234 bytes)]"]
    assert shared.call("demo", "missing_tool", {})[1] is True


def test_a_hung_tool_times_out_its_server_is_stopped_and_restarted_on_the_next_call(
        statuses: list[str]) -> None:
    with McpServers({"demo": stdio_spec()}, call_timeout=1.5,
                    on_status=statuses.append) as servers:
        first = server_pid(servers)
        started = time.monotonic()
        text, is_error = servers.call("demo", "slow", {"seconds": 60})
        waited = time.monotonic() - started
        assert is_error and text == ("slow did not finish within 1.5 s; the MCP server 'demo' "
                                     "was stopped and will be started again on the next call")
        assert waited < 30  # far from the tool's 60 s: the call was abandoned, not awaited
        assert statuses[-1].startswith("MCP server 'demo': slow did not finish within 1.5 s")
        assert wait_gone(first)
        second = server_pid(servers)
        assert second != first and statuses[-1] == "restarting MCP server 'demo'…"
        assert servers.call("demo", "add", {"a": 1}) == ("3", False)


def test_a_server_that_dies_mid_call_gives_an_error_then_restarts(
        servers: McpServers, statuses: list[str]) -> None:
    first = server_pid(servers)
    text, is_error = servers.call("demo", "die", {})
    assert is_error and text.startswith("the MCP server 'demo' stopped during die")
    assert "will be started again on the next call" in text
    assert any(s.startswith("MCP server 'demo' stopped during die") for s in statuses)
    assert servers.call("demo", "add", {"a": 5}) == ("7", False)
    assert server_pid(servers) != first and not alive(first)


def test_a_server_killed_between_calls_is_restarted_before_the_call(
        servers: McpServers, statuses: list[str]) -> None:
    import os
    import signal

    first = server_pid(servers)
    os.kill(first, signal.SIGKILL)
    assert wait_gone(first)
    time.sleep(0.2)  # the session notices its transport closed
    assert servers.call("demo", "add", {"a": 0, "b": 0}) == ("0", False)
    assert "restarting MCP server 'demo'…" in statuses


def test_a_server_that_cannot_start_says_why_and_is_tried_again(statuses: list[str]) -> None:
    with McpServers({"bad": stdio_spec(DEMO_FAIL_AT_START="1"),
                     "gone": {"command": "no-such-mcp-server-xyz"},
                     "demo": stdio_spec()}, on_status=statuses.append) as servers:
        assert {t.server for t in servers.tools()} == {"demo"}  # the others are left out
        assert ("MCP server 'bad' could not start: the server closed the connection (it "
                "exited?) (its last output: demo server: missing DEMO_TOKEN)") in statuses
        assert "MCP server 'gone' could not start: no-such-mcp-server-xyz was not found" in statuses
        text, is_error = servers.call("bad", "add", {"a": 1})
        assert is_error and "missing DEMO_TOKEN" in text and "tried again on the next call" in text
        lines = servers.describe()
        assert lines[0].startswith("bad (stdio: ") and "failed: " in lines[0]
        assert lines[2].endswith("running, 9 tools")


def test_close_stops_every_process_is_idempotent_and_a_later_call_starts_again(
        servers: McpServers) -> None:
    pid = server_pid(servers)
    servers.close()
    assert wait_gone(pid)
    servers.close()
    assert servers.call("demo", "add", {"a": 1}) == ("3", False)
    again = server_pid(servers)
    servers.close()
    assert wait_gone(again)


def test_calls_work_from_threads_and_while_another_loop_runs_in_the_caller(
        shared: McpServers) -> None:
    add = {t.name: t for t in shared.tools()}["add"]

    async def like_ipykernel() -> str:  # cell code runs synchronously inside a running loop
        await asyncio.sleep(0)
        return str(add(a=10, b=1))

    # on a thread of its own: the loop it runs is the only one there (a loop another test
    # of this worker left marked running on the main thread made asyncio.run refuse)
    in_loop: list[str] = []
    runner = threading.Thread(target=lambda: in_loop.append(asyncio.run(like_ipykernel())))
    runner.start()
    runner.join(60)
    assert in_loop == ["11"]
    results: dict[int, Any] = {}

    def worker(n: int) -> None:
        results[n] = add(a=n, b=100)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == {n: str(n + 100) for n in range(4)}


def test_an_agent_chat_calls_an_mcp_tool_and_counts_its_schema(shared: McpServers) -> None:
    model = ScriptedModel([calls(("add", {"a": 2, "b": 40})), calls(("fail", {})),
                           reply("the sum is 42")])
    agent, _ = make_agent(model, builtin_tools=False)
    before = agent.context_state().tokens
    assert agent.breakdown().tools == 0
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    for made in shared.tools(reserved=agent.tools):
        agent.add_tool(made)
    assert agent.breakdown().tools > 0  # their schemas are in the window
    assert agent.context_state().tokens > before + 100
    assert agent.chat("what is 2 + 40?").text == "the sum is 42"
    assert tool_results(agent) == ["42", "Error: fail raised McpToolError: Error executing tool fail"]
    sent = {t["function"]["name"]: t for t in model.tools_seen[0]}
    assert sent["add"]["function"]["parameters"]["required"] == ["a"]


def test_processes_stop_at_interpreter_exit_and_when_the_python_process_is_killed(
        tmp_path: Any) -> None:
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(DEMO.parents[4])!r})
        from nbagent.mcp import McpServers
        from tests.agent.mcp.servers.launch import stdio_spec
        servers = McpServers({{"demo": stdio_spec()}})
        print(servers.call("demo", "pid", {{}})[0], flush=True)
        if sys.argv[1] == "hang":
            time.sleep(600)
    """))
    exits = subprocess.run([sys.executable, str(script), "exit"], capture_output=True,
                           text=True, timeout=120)
    assert exits.returncode == 0, exits.stderr
    assert wait_gone(int(exits.stdout.split()[0]))
    killed = subprocess.Popen([sys.executable, str(script), "hang"], stdout=subprocess.PIPE,
                              text=True)
    assert killed.stdout is not None
    pid = int(killed.stdout.readline())
    assert alive(pid)
    killed.kill()  # like a kernel restart that had to kill: no atexit runs
    killed.wait(30)
    assert wait_gone(pid)  # the server saw its stdin close and exited


def test_a_kernel_restart_leaves_no_server_process() -> None:
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(DEMO.parents[4]))
    client = manager.client()
    client.start_channels()
    outputs: list[str] = []

    def keep(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            outputs.append(message["content"]["text"])

    try:
        client.wait_for_ready(timeout=60)
        client.execute_interactive(textwrap.dedent("""
            from nbagent.mcp import McpServers
            from tests.agent.mcp.servers.launch import stdio_spec
            servers = McpServers({"demo": stdio_spec()})
            print(servers.call("demo", "pid", {})[0])
        """), output_hook=keep, timeout=120)
        pid = int("".join(outputs).split()[0])
        assert alive(pid)
        manager.restart_kernel(now=True)  # what "Restart kernel" does when it must kill
        assert wait_gone(pid)
        outputs.clear()
        client.wait_for_ready(timeout=60)
        client.execute_interactive(
            "from nbagent.mcp import McpServers\n"
            "from tests.agent.mcp.servers.launch import stdio_spec\n"
            "servers = McpServers({'demo': stdio_spec()})\n"
            "print(servers.call('demo', 'pid', {})[0])", output_hook=keep, timeout=120)
        pid = int("".join(outputs).split()[0])
        manager.restart_kernel(now=False)  # a graceful restart: atexit closes the servers
        assert wait_gone(pid)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_server_that_hangs_at_start_times_out_and_is_listed_again_only_later(
        statuses: list[str]) -> None:
    hang = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
    with McpServers({"hang": hang}, start_timeout=1, retry_listing=3600,
                    on_status=statuses.append) as servers:
        assert servers.tools() == []
        assert statuses == ["starting MCP server 'hang'…",
                            "MCP server 'hang' could not start: it did not start within 1 s"]
        assert servers.tools() == [] and len(statuses) == 2  # not tried again yet
        servers.retry_listing = 0
        assert servers.tools() == [] and len(statuses) == 3  # tried: the same failure unsaid
        assert statuses[-1] == "starting MCP server 'hang'…"
