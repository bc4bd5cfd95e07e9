"""`Toolbox`: the tools an agent offers, in order — built-ins, the user's, MCP servers' —
without starting anything at configuration (the real servers are in tests/real/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nbagent import NbagentError, NbagentWarning, tool
from nbagent.agent import Toolbox


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_tools_come_in_order_and_a_name_is_replaced_not_doubled() -> None:
    @tool(name="add")
    def better_add(a: int, b: int) -> int:
        """Add, better."""
        return a + b

    box = Toolbox([add])
    box.offer_builtins([tool(name="list_variables")(lambda: "none")])
    assert list(box.tools) == ["list_variables", "add"]
    box.add(better_add)
    assert list(box.tools) == ["list_variables", "add"] and box.tools["add"] is better_add
    assert [s["function"]["name"] for s in box.schemas()] == ["list_variables", "add"]


def test_configuring_servers_starts_none_and_lists_them_as_not_started() -> None:
    box = Toolbox(mcp_servers={"demo": {"command": sys.executable, "args": ["-c", "pass"]}})
    try:
        assert box.mcp_servers() == [("demo", "not started", [])]
        assert box.unlisted_servers() == ["demo"] and list(box.tools) == []
    finally:
        box.close()
    assert Toolbox().mcp_servers() == [] and Toolbox().unlisted_servers() == []


def test_without_the_mcp_extra_servers_are_a_clear_error_and_a_config_file_a_warning(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [m for m in sys.modules if m.startswith("nbagent.agent.mcp.")]:
        monkeypatch.delitem(sys.modules, name)  # imported again, with the SDK gone
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] + ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the SDK were not installed
    with pytest.raises(NbagentError, match=r"pip install 'jupyter-nbagent\[mcp\]'"):
        Toolbox(mcp_servers={"demo": {"command": "x"}})
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {"demo": {"command": "x"}}}')
    with pytest.warns(NbagentWarning, match=r"jupyter-nbagent\[mcp\]"):
        assert Toolbox(mcp_config=str(config)).mcp_servers() == []
