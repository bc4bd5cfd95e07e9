"""The `%nbagent` forms for tools and models the user brings (`mcp add/list/remove`,
`models`), and the warm start `%load_ext nbagent` gives the embedded model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import nbagent
from nbagent import Agent, NbagentError
from nbagent.testing import ScriptedModel, calls, reply
from tests.notebook.helpers import plain, session


class McpAgent(Agent):
    """The MCP calls of the agent, as the notebook uses them, recorded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.servers: dict[str, dict[str, Any]] = {}

    def add_mcp_server(self, name: str, spec: dict[str, Any]) -> None:
        self.servers[name] = spec

    def remove_mcp_server(self, name: str) -> None:
        if name not in self.servers:
            raise NbagentError(f"no MCP server named {name!r}")
        del self.servers[name]

    def mcp_servers(self, *, start: bool = False) -> list[tuple[str, str, list[str]]]:
        return [(name, "running", ["query", "tables"]) for name in self.servers]


@pytest.mark.parametrize(
    ("rest", "spec"),
    [
        ("db -- uvx mcp-server-sqlite --db-path 'my data/shop.db'",
         ("db", {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path",
                                             "my data/shop.db"]})),
        ("docs http://127.0.0.1:8931/mcp", ("docs", {"url": "http://127.0.0.1:8931/mcp"})),
    ],
    ids=["stdio", "http"],
)
def test_mcp_add_reads_a_command_or_a_url(ip: InteractiveShell, rest: str, spec: Any) -> None:
    agent = session(ScriptedModel(), kind=McpAgent)
    with capture_output():
        ip.run_line_magic("nbagent", f"mcp add {rest}")
    name, entry = spec
    assert agent.servers == {name: entry}


@pytest.mark.parametrize("rest", ["db", "db uvx server", "db --", ""],
                         ids=["no-spec", "no-dashes", "no-command", "nothing"])
def test_mcp_add_without_a_spec_says_the_forms(ip: InteractiveShell, rest: str) -> None:
    agent = session(ScriptedModel(), kind=McpAgent)
    with pytest.raises(UsageError):
        ip.run_line_magic("nbagent", f"mcp add {rest}")
    assert agent.servers == {}


def test_mcp_add_list_remove_through_the_shell(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel(), kind=McpAgent)
    with capture_output() as added:
        ip.run_line_magic("nbagent", f"mcp add db -- {sys.executable} -m server --port 3")
    assert agent.servers == {"db": {"command": sys.executable,
                                    "args": ["-m", "server", "--port", "3"]}}
    assert plain(added) == ["db: running · query, tables"]
    with capture_output() as listed:
        ip.run_line_magic("nbagent", "mcp list")
    assert plain(listed) == plain(added)
    with capture_output() as removed:
        ip.run_line_magic("nbagent", "mcp remove db")
    assert agent.servers == {}
    assert plain(removed) == ["nbagent: MCP server db removed\nnbagent: no MCP servers in this "
                              "session (add one: %nbagent mcp add NAME …)"]
    with capture_output() as missing:
        ip.run_line_magic("nbagent", "mcp remove db")
    assert plain(missing) == ["nbagent: no MCP server named 'db'"]
    with pytest.raises(UsageError, match="mcp add NAME"):
        ip.run_line_magic("nbagent", "mcp frobnicate")


def test_models_lists_what_was_found_with_window_tools_and_the_call(
        ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from nbagent.agent.models import _discovery
    from tests.agent.models.helpers import gguf

    monkeypatch.setattr(_discovery, "_found", None)  # look again, in this test's caches
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    model = gguf(tmp_path / "hub" / "qwen2.5-0.5b-instruct-q4_k_m.gguf", context=32_768)
    with capture_output() as captured:
        ip.run_line_magic("nbagent", "models")
    shown = plain(captured)[0]
    assert shown.startswith("qwen2.5-0.5b-instruct-q4_k_m.gguf (")
    assert "window 32,768 tokens from GGUF metadata (trained length), tool calls" in shown
    assert ("use it: nbagent.current().configure(model='local', local_model_path="
            f"{str(model)!r}, local_n_ctx=8192)") in shown
    assert "as found" not in shown  # a fresh look
    model.unlink()
    with capture_output() as cached:
        ip.run_line_magic("nbagent", "models")  # the earlier look's answer, and it says so
    assert "qwen2.5-0.5b" in plain(cached)[0]
    assert "as found 0 min ago (%nbagent models --refresh looks again)" in plain(cached)[0]
    with capture_output() as refreshed:
        ip.run_line_magic("nbagent", "models --refresh")  # looks again: the file is gone
    assert "no local model server or model file found" in plain(refreshed)[0]
    assert "as found" not in plain(refreshed)[0]


class StartableModel(ScriptedModel):
    """A model with a server of its own to start, as the embedded model has."""

    started = 0

    def start_in_background(self) -> bool:
        StartableModel.started += 1
        return True


@pytest.mark.parametrize(("model", "started"), [
    (StartableModel(name="local/smollm2"), 1),
    (ScriptedModel(name="openai/gpt-4o"), 0),
], ids=["embedded", "hosted"])
def test_loading_the_extension_warms_the_embedded_model_only(model: ScriptedModel,
                                                            started: int) -> None:
    """%load_ext starts the server of a session's model that has one, once the loading
    cell has run; a hosted model's session starts nothing, nor a load from outside a cell."""
    shell = InteractiveShell.instance()
    StartableModel.started = 0
    nbagent.set_current(Agent(model=model, namespace={}, archive=False))
    try:
        nbagent.load_ipython_extension(shell)  # outside a cell: the next cell cancels it
        shell.run_cell("x = 1", store_history=True)
        assert StartableModel.started == 0
        shell.run_cell("import nbagent; nbagent.load_ipython_extension(get_ipython())",
                       store_history=True)  # as %load_ext runs it in a fresh kernel
    finally:
        nbagent.set_current(None)
    assert StartableModel.started == started


def test_a_model_that_cannot_start_does_not_fail_the_load(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**options: Any) -> Agent:
        raise NbagentError("the local model is not installed")

    monkeypatch.setattr(nbagent, "current", broken)
    nbagent.load_ipython_extension(InteractiveShell.instance())  # the first chat says what is wrong


@pytest.mark.real
def test_a_real_mcp_server_added_in_the_notebook_answers_a_chat(ip: InteractiveShell) -> None:
    from tests.agent.mcp.servers.launch import DEMO, http_demo

    model = ScriptedModel([calls(("add", {"a": 2, "b": 40})), reply("42"),
                           calls(("echo", {"text": "over http"})), reply("echoed")])
    agent = session(model, builtin_tools=False)
    try:
        with capture_output() as added:  # started at once: its live state and its tools
            ip.run_line_magic("nbagent", f"mcp add demo -- {sys.executable} '{DEMO}'")
        (shown,) = plain(added)
        assert shown.startswith("demo: running, 9 tools · add, echo, slow")
        assert "\n  add: Add two whole numbers.\n" in shown  # what the model is told
        with capture_output() as allowed:
            ip.run_line_magic("nbagent", "mcp allow demo add")
        assert plain(allowed) == ["nbagent: add of demo runs without asking for the rest of "
                                  "this session"]
        with capture_output():
            ip.run_line_magic("chat", "what is 2 + 40?")
        assert [m["content"] for m in agent.history if m["role"] == "tool"] == ["42"]
        with capture_output() as listed:
            ip.run_line_magic("nbagent", "mcp list")
        assert plain(listed) == [shown]
        with capture_output() as context:
            ip.run_line_magic("context", "")
        costs = agent.mcp_schema_tokens()
        assert list(costs) == ["demo"] and 0 < costs["demo"] <= agent.breakdown().tools
        assert plain(context)[-1] == (f"of the tool schemas, MCP servers' tools: demo "
                                      f"{costs['demo']:,} tokens ({costs['demo']:,} in all)")
        with http_demo() as url:
            with capture_output():
                ip.run_line_magic("nbagent", "mcp remove demo")
                ip.run_line_magic("nbagent", f"mcp add web {url}")
                ip.run_line_magic("nbagent", "mcp allow web")
                ip.run_line_magic("chat", "echo it")
        assert str(agent.history[-2]["content"]).startswith("over http")
        with pytest.raises(UsageError, match="%nbagent mcp"):
            ip.run_line_magic("nbagent", "mcp remove nothing-by-that-name")
    finally:
        agent.close()
