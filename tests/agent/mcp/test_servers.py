"""`McpServers` (`_servers`) as configured, before any server runs: servers by name from
the code and a config file (the code's replace the file's), one line per server saying
where it is and that it has not started, a server removed or replaced, and a call to a
server no longer there answered as text for the model. Starting nothing: the servers'
real processes are tests/real/test_mcp*.py's, and a behaviour test of a live call goes
there too (test_pool's docstring says where an MCP test goes, and why not here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nbagent.agent.mcp import McpServers
from nbagent.approval import Approval

PYTHON = {"command": sys.executable, "args": ["-c", "pass"]}


def test_the_code_adds_to_the_config_files_servers_and_replaces_one_of_the_same_name(
        tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "files-server"]},
        "db": {"url": "https://db.example/mcp"}}}))
    with McpServers({"db": {"url": "http://127.0.0.1:9/mcp"}, "py": PYTHON},
                    config=config) as servers:
        assert list(servers) == ["files", "db", "py"] and len(servers) == 3
        assert servers.describe() == [
            "files (stdio: npx -y files-server): not started",
            "db (http: http://127.0.0.1:9/mcp): not started",
            f"py (stdio: {sys.executable} -c pass): not started"]
        assert repr(servers) == "McpServers(files, db, py)"


def test_a_server_is_removed_or_replaced_by_name() -> None:
    with McpServers({"a": PYTHON, "b": PYTHON}) as servers:
        servers.add("a", {"url": "https://a.example/mcp"})  # replaced: now the last one
        assert servers.describe() == [f"b (stdio: {sys.executable} -c pass): not started",
                                      "a (http: https://a.example/mcp): not started"]
        servers.remove("b")
        assert list(servers) == ["a"]
        with pytest.raises(KeyError, match="no MCP server named 'b'; known: a"):
            servers.remove("b")
        with pytest.raises(KeyError, match="no MCP server named 'zz'"):
            servers.start("zz")
    assert repr(McpServers()) == "McpServers(none)"


def test_a_call_to_a_server_no_longer_configured_is_an_error_for_the_model() -> None:
    with McpServers({"a": PYTHON}) as servers:
        servers.remove("a")
        assert servers.call("a", "read", {}) == (
            "there is no MCP server named 'a' any more", True)
        assert servers.tools() == []


def test_credentials_in_a_url_are_never_shown() -> None:
    with McpServers({"r": {"url": "https://user:secret@r.example/mcp"}}) as servers:
        assert servers.describe() == ["r (http: https://r.example/mcp): not started"]


def test_an_allowance_belongs_to_the_server_it_was_given_to_not_its_name() -> None:
    said: list[str] = []
    approval = Approval(ask=None)
    with McpServers({"db": PYTHON}, approval=approval, on_status=said.append) as servers:
        approval.allow("mcp", "db")  # "s" at a question, or %nbagent mcp allow db
        approval.allow("mcp", "db", "query")
        servers.remove("db")
        servers.add("db", PYTHON)  # the same server again: what was allowed stays
        assert approval.allowed() == [("mcp", "db"), ("mcp", "db", "query")] and said == []
        servers.remove("db")
        servers.add("db", {"command": sys.executable, "args": ["-c", "print('other')"]})
        assert approval.allowed() == []  # another server under the name asks again
        assert said == [f"MCP server 'db' is now {sys.executable} -c print('other'): what you "
                        "had allowed for the earlier 'db' does not carry over"]
        approval.allow("mcp", "db")
        servers.add("db", {"url": "https://db.example/mcp"})  # replaced in place: the same
        assert approval.allowed() == []
        servers.add("web", {"url": "https://db.example/mcp", "alwaysAllow": True})
        assert approval.allowed() == [("mcp", "web")]  # what its own spec allows stands
