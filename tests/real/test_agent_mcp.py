"""MCP servers configured on the agent — in Python, on a running session and from the
`mcpServers` config file other clients use — offer their tools to a real chat through the
agent's usual path (schemas counted, results capped and archived), and a server that
cannot start or dies never ends a chat."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

from nbagent import Agent, NbagentWarning, Settings
from nbagent.testing import ScriptedModel, calls, reply
from tests.agent.mcp.servers.launch import stdio_spec

pytestmark = pytest.mark.real


def tool_results(agent: Agent) -> list[str]:
    return [str(m["content"]) for m in agent.history if m["role"] == "tool"]


def test_servers_given_in_python_offer_their_tools_on_the_first_chat() -> None:
    model = ScriptedModel([calls(("add", {"a": 2, "b": 40})), reply("42")])
    agent = Agent(model=model, builtin_tools=False, archive=False,
                  mcp_servers={"demo": stdio_spec()})
    try:
        assert agent.tools == {}  # configuring starts nothing
        assert agent.mcp_servers() == [("demo", "not started", [])]
        before = agent.context_state().tokens
        assert agent.chat("what is 2 + 40?").text == "42"
        assert tool_results(agent) == ["42"]
        assert "add" in agent.tools and "echo" in agent.tools
        assert any(s["function"]["name"] == "add" for s in model.tools_seen[0])
        name, state, tools = agent.mcp_servers()[0]
        assert name == "demo" and state.startswith("running") and "add" in tools
        assert agent.context_state().tokens > before  # the schemas count in the window
    finally:
        agent.close()


def test_a_server_added_on_a_running_session_and_removed_again() -> None:
    model = ScriptedModel([reply("no tools yet"), calls(("echo", {"text": "hi"})),
                           reply("echoed"), reply("gone")])
    agent = Agent(model=model, builtin_tools=False, archive=False)
    try:
        agent.chat("hello")
        agent.add_mcp_server("demo", stdio_spec())
        agent.chat("echo hi")
        assert tool_results(agent)[0].startswith("hi")  # the demo echo adds its own time
        agent.remove_mcp_server("demo")
        agent.chat("and now?")
        assert "echo" not in agent.tools and agent.mcp_servers() == []
        assert [s["function"]["name"] for s in model.tools_seen[-1]] == []
        with pytest.raises(KeyError, match="no MCP server named 'demo'"):
            agent.remove_mcp_server("demo")
        with pytest.raises(ValueError):
            agent.add_mcp_server("bad", {"command": ""})
    finally:
        agent.close()


def test_the_config_file_other_clients_use(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": stdio_spec()["args"]}}}))
    model = ScriptedModel([calls(("add", {"a": 1})), reply("3")])
    agent = Agent(model=model, builtin_tools=False, archive=False,
                  settings=Settings(mcp_config=str(config)))
    try:
        agent.chat("1 + 2?")
        assert tool_results(agent) == ["3"]
    finally:
        agent.close()
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.warns(NbagentWarning, match="MCP config .* was not used"):
        Agent(model=ScriptedModel(), archive=False, settings=Settings(mcp_config=str(broken)))


def test_a_server_that_cannot_start_or_dies_never_ends_the_chat(tmp_path: Path) -> None:
    model = ScriptedModel([reply("carried on"), calls(("die", {})), reply("it died"),
                           calls(("add", {"a": 1, "b": 1})), reply("2")])
    agent = Agent(model=model, builtin_tools=False, archive=False,
                  mcp_servers={"missing": {"command": str(tmp_path / "no-such-server")},
                               "demo": stdio_spec()})
    try:
        with pytest.warns(NbagentWarning, match="'missing' could not start"):
            assert agent.chat("hello").text == "carried on"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NbagentWarning)
            assert agent.chat("die please").text == "it died"
            assert "stopped during die" in tool_results(agent)[-1]
            assert agent.chat("1 + 1?").text == "2"  # restarted on the next call
        assert tool_results(agent)[-1] == "2"
    finally:
        agent.close()
