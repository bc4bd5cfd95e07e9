"""MCP servers configured on the agent — in Python, on a running session and from the
config files other clients use, read entry by entry — offer their tools to a real chat
through the agent's usual path (schemas counted, results capped and archived); each call
asks the user first unless allowed; a server that cannot start or dies never ends a chat.

Each agent starts its own stdio servers, so the tests whose subject is not the stdio
command (approval, adding and removing, the live state) reach one demo server over HTTP
for the module (`web`: a stdio start costs the server the SDK's import, ~1 CPU-s); the
session given servers in Python, the config files' commands, a server that dies and the
kernel's start their own over stdio."""

from __future__ import annotations

import json
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, NbagentWarning, Settings
from nbagent.approval import NoOneToAsk
from nbagent.events import Notice
from nbagent.testing import ScriptedModel, calls, reply
from tests.agent.mcp.servers.launch import DEMO, http_demo, stdio_spec

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def web() -> Iterator[dict[str, Any]]:
    """The module's demo server over streamable HTTP, as a server spec."""
    with http_demo() as url:
        yield {"url": url}


def tool_results(agent: Agent) -> list[str]:
    return [str(m["content"]) for m in agent.history if m["role"] == "tool"]


def notices(agent: Agent) -> list[str]:
    """The lines the chat cell shows for the user as they happen (`Notice` events)."""
    said: list[str] = []
    agent.events.subscribe(lambda e: said.append(e.text) if isinstance(e, Notice) else None)
    return said


def test_servers_given_in_python_offer_their_tools_on_the_first_chat() -> None:
    model = ScriptedModel([calls(("add", {"a": 2, "b": 40})), reply("42")])
    agent = Agent(model=model, builtin_tools=False, archive=False,
                  mcp_servers={"demo": stdio_spec()})
    agent.approval.allow("mcp", "demo")
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


def test_a_server_added_on_a_running_session_and_removed_again(web: dict[str, Any]) -> None:
    model = ScriptedModel([reply("no tools yet"), calls(("echo", {"text": "hi"})),
                           reply("echoed"), reply("gone")])
    agent = Agent(model=model, builtin_tools=False, archive=False)
    try:
        agent.chat("hello")
        agent.add_mcp_server("demo", {**web, "alwaysAllow": ["echo"]})
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
        "command": sys.executable, "args": stdio_spec()["args"], "alwaysAllow": True}}}))
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
                               "demo": {**stdio_spec(), "alwaysAllow": True}})
    said = notices(agent)
    try:
        assert agent.toolbox.mcp is not None
        agent.toolbox.mcp.retry_listing = 0  # every chat tries the missing server again
        with warnings.catch_warnings():
            warnings.simplefilter("error", NbagentWarning)  # a line in the chat, not a warning
            assert agent.chat("hello").text == "carried on"
            assert said == [f"MCP server 'missing' could not start: {tmp_path / 'no-such-server'}"
                            " was not found"]
            assert agent.chat("die please").text == "it died"
            assert "stopped during die" in tool_results(agent)[-1]
            assert said[-1].startswith("MCP server 'demo' stopped during die (")
            assert agent.chat("1 + 1?").text == "2"  # restarted on the next call, and said
        assert tool_results(agent)[-1] == "2"
        assert said[-1] == "restarting MCP server 'demo'…"
        assert len([line for line in said if "could not start" in line]) == 1  # once
    finally:
        agent.close()


def test_each_call_asks_first_showing_tool_server_and_arguments(web: dict[str, Any]) -> None:
    questions: list[str] = []
    answers = ["n", "y", "t"]

    def ask(question: str) -> str:
        questions.append(question)
        return answers.pop(0)

    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), calls(("add", {"a": 3})),
                           calls(("add", {"a": 4})), calls(("add", {"a": 5})), reply("done")])
    agent = Agent(model=model, builtin_tools=False, archive=False,
                  mcp_servers={"demo": web})
    agent.approval.ask = ask
    try:
        assert agent.chat("add things").text == "done"
        assert tool_results(agent) == [
            "Error: add raised McpToolError: the user did not allow add (MCP server 'demo') "
            "to run", "5", "6", "7"]
        assert len(questions) == 3  # "t" allowed the tool for the rest of the session
        assert questions[0].startswith("nbagent: the model wants to call the MCP tool add "
                                       "(MCP server 'demo') with:\n  {\"a\": 1, \"b\": 2}")
        assert agent.approval.allowed() == [("mcp", "demo", "add")]
    finally:
        agent.close()


def test_a_delegated_tasks_calls_ask_the_same_approval_as_the_main_agents(
        web: dict[str, Any]) -> None:
    questions: list[str] = []

    def ask(question: str) -> str:
        questions.append(question)
        return "t"  # always, for this tool: for the branch and the main agent alike

    model = ScriptedModel([calls(("delegate", {"task": "add 2 and 40"})),
                           calls(("add", {"a": 2, "b": 40})), reply("42"),
                           calls(("add", {"a": 1, "b": 1})), reply("42, and 2")])
    agent = Agent(model=model, builtin_tools=["delegate"], archive=False,
                  mcp_servers={"demo": web})
    agent.approval.ask = ask
    try:
        assert agent.chat("add things").text == "42, and 2"
        assert len(questions) == 1 and "MCP tool add (MCP server 'demo')" in questions[0]
        assert agent.approval.allowed() == [("mcp", "demo", "add")]  # one Approval
        assert "add" in {t["function"]["name"] for t in model.tools_seen[1]}  # the branch's
        branch, main = tool_results(agent)
        assert branch.startswith("[delegated task 1 (done)") and branch.endswith("42")
        assert main == "2"
    finally:
        agent.close()


def test_where_no_one_can_answer_the_call_is_refused_with_a_clear_result(
        web: dict[str, Any]) -> None:
    def batch(question: str) -> str:
        raise NoOneToAsk("no terminal")

    model = ScriptedModel([calls(("add", {"a": 1})), reply("refused")])
    agent = Agent(model=model, builtin_tools=False, archive=False,
                  mcp_servers={"demo": web})
    agent.approval.ask = batch
    try:
        assert agent.chat("add").text == "refused"
        (result,) = tool_results(agent)
        assert "add (MCP server 'demo') was not run: it needs the user's approval and no one " \
               "can answer here" in result
    finally:
        agent.close()


def test_a_config_file_loads_entry_by_entry_as_vs_code_writes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_ARG", str(DEMO))
    config = tmp_path / "mcp.json"
    config.write_text("""{
      // VS Code's mcp.json: JSONC, a servers object, a type per server
      "inputs": [],
      "servers": {
        "demo": {"type": "stdio", "command": "PYTHON", "args": ["${env:DEMO_ARG}"],
                 "alwaysAllow": ["add"],},
        "asks": {"type": "http", "url": "https://example.invalid/mcp",
                 "headers": {"Authorization": "Bearer ${input:token}"}},
        "broken": {"type": "stdio"},
        "off": {"command": "x", "disabled": true},
      },
    }""".replace("PYTHON", sys.executable))
    model = ScriptedModel([calls(("add", {"a": 1})), reply("3")])
    with pytest.warns(NbagentWarning) as said:
        agent = Agent(model=model, builtin_tools=False, archive=False,
                      settings=Settings(mcp_config=str(config)))
    try:
        assert [str(w.message) for w in said] == [
            f"nbagent: the MCP config {config} skips {line}" for line in (
                "'asks': asks for ${input:token}, an input VS Code prompts for; nbagent "
                "cannot (use ${env:NAME} instead)",
                "'broken': command: Field required",
                "'off': disabled in the config")]
        assert agent.chat("1 + 2?").text == "3"
        assert tool_results(agent) == ["3"]
    finally:
        agent.close()


def test_mcp_servers_started_say_their_live_state_or_why_they_cannot_start(
        tmp_path: Path, web: dict[str, Any]) -> None:
    agent = Agent(model=ScriptedModel(), builtin_tools=False, archive=False)
    try:
        agent.add_mcp_server("demo", web)
        agent.add_mcp_server("gone", {"command": str(tmp_path / "no-such-server")})
        agent.add_mcp_server("exits", stdio_spec(DEMO_FAIL_AT_START="1"))
        assert agent.mcp_servers() == [(name, "not started", [])
                                       for name in ("demo", "gone", "exits")]
        states = {name: (state, tools) for name, state, tools
                  in agent.mcp_servers(start=True)}
        assert states["demo"][0] == "running, 9 tools" and "add" in states["demo"][1]
        assert states["gone"] == (f"failed: {tmp_path / 'no-such-server'} was not found", [])
        assert states["exits"][0] == ("failed: the server closed the connection (it exited?) "
                                      "(its last output: demo server: missing DEMO_TOKEN)")
        # (one that hangs: "failed: it did not start within N s", tests/real/test_mcp.py)
    finally:
        agent.close()


def test_in_a_kernel_the_question_is_the_front_ends_input_prompt_while_the_cell_runs() -> None:
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(DEMO.parents[4]))
    client = manager.client()
    client.start_channels()
    outputs: list[str] = []
    prompts: list[str] = []

    def keep(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            outputs.append(message["content"]["text"])

    def answer(message: dict[str, Any]) -> None:  # the front end's input box
        prompts.append(message["content"]["prompt"])
        client.input("y")

    # one agent (and one server) for both cells: "y" allowed the first call only
    start = textwrap.dedent("""
        from nbagent import Agent
        from nbagent.testing import ScriptedModel, calls, reply
        from tests.agent.mcp.servers.launch import stdio_spec
        agent = Agent(model=ScriptedModel([calls(("add", {"a": 40})), reply("done")] * 2),
                      builtin_tools=False, archive=False, mcp_servers={"demo": stdio_spec()})
    """)
    chat = textwrap.dedent("""
        agent.chat("add")
        print([m["content"] for m in agent.history if m["role"] == "tool"][-1:])
    """)
    try:
        client.wait_for_ready(timeout=60)
        client.execute_interactive(start + chat, output_hook=keep, stdin_hook=answer,
                                   allow_stdin=True, timeout=180)
        assert len(prompts) == 1 and prompts[0].startswith(
            "nbagent: the model wants to call the MCP tool add (MCP server 'demo') with:")
        assert "['42']" in "".join(outputs)
        outputs.clear()
        client.execute_interactive(chat + "agent.close()\n", output_hook=keep,
                                   allow_stdin=False, timeout=180)
        assert "no one can answer here" in "".join(outputs)  # a batch run: refused
        assert len(prompts) == 1
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
