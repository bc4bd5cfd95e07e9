"""MCP server specs and the mcpServers config file: what is accepted, what is refused
(with the server and the field named), and that secrets stay out of reprs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import AliasChoices, AliasPath, BaseModel

from nbagent.agent.mcp import (
    DISABLED_FORMS,
    SERVER_KEYS,
    HttpServer,
    StdioServer,
    is_disabled,
    load_mcp_config,
    read_mcp_config,
    server_spec,
    server_specs,
)
from nbagent.agent.mcp._config import (  # its own table of dropped keys, kept private
    _PASSED_OVER,
    ServerOptions,
)
from nbagent.mcp import McpConfigError


def test_a_claude_desktop_style_file_gives_stdio_and_http_specs(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server-filesystem", "/data"],
                  "env": {"API_KEY": "sk-secret-value"}},
        "tracker": {"url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer tok-123"}},
        "old": {"command": "old-server", "disabled": True},
    }}))
    specs = load_mcp_config(config)
    assert list(specs) == ["files", "tracker"]
    files, tracker = specs["files"], specs["tracker"]
    assert isinstance(files, StdioServer) and files.args == ["-y", "server-filesystem", "/data"]
    assert files.env == {"API_KEY": "sk-secret-value"}
    assert isinstance(tracker, HttpServer) and tracker.headers["Authorization"] == "Bearer tok-123"
    shown = repr(specs) + files.describe() + tracker.describe()
    assert "sk-secret-value" not in shown and "tok-123" not in shown


def test_vs_code_servers_object_and_type_fields_are_read(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {
        "a": {"type": "stdio", "command": "a-server"},
        "b": {"type": "http", "url": "http://127.0.0.1:9000/mcp"},
    }}))
    specs = load_mcp_config(config)
    assert specs["a"].type == "stdio" and specs["b"].type == "http"


@pytest.mark.parametrize(("raw", "expected"), [
    ({"command": "x", "argz": []}, "MCP server 'db': argz: Extra inputs are not permitted"),
    ({"command": ""}, "MCP server 'db': command: String should have at least 1 character"),
    ({"args": ["x"]}, "MCP server 'db': needs 'command'"),
    ({"command": "x", "url": "http://h/mcp"}, "not both"),
    ({"url": "ftp://h/mcp"}, "is not an http:// or https:// address"),
    ({"type": "stdio", "url": "http://h/sse"}, "type: Input should be 'http'"),
    ({"command": "x", "args": "not-a-list"}, "MCP server 'db': args: Input should be a valid list"),
    ("npx server", "expected an object with 'command' or 'url', got str"),
], ids=["extra-field", "empty-command", "neither", "both", "bad-url", "stdio-url", "args-type",
        "not-object"])
def test_bad_specs_are_refused_naming_the_server_and_the_problem(raw: object,
                                                                 expected: str) -> None:
    with pytest.raises(McpConfigError) as caught:
        server_specs({"db": raw})  # type: ignore[dict-item]
    assert expected in str(caught.value)


def test_environment_variables_are_expanded_and_a_missing_one_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACKER_TOKEN", "tok-xyz")
    spec = server_spec("t", {"url": "https://${HOST:-mcp.example.com}/mcp",
                             "headers": {"Authorization": "Bearer ${TRACKER_TOKEN}"}})
    assert isinstance(spec, HttpServer)
    assert spec.url == "https://mcp.example.com/mcp"
    assert spec.headers == {"Authorization": "Bearer tok-xyz"}
    monkeypatch.delenv("TRACKER_TOKEN")
    with pytest.raises(McpConfigError, match=r"MCP server 't' uses \$\{TRACKER_TOKEN\}"):
        server_spec("t", {"url": "https://h/mcp", "headers": {"A": "${TRACKER_TOKEN}"}})


@pytest.mark.parametrize(("text", "expected"), [
    (None, "cannot read the MCP config"),
    ("{not json", r"is not valid JSON \(<string>:1"),
    ('{"other": {}}', "has no 'mcpServers' object"),
    ('[1, 2]', "has no 'mcpServers' object"),
], ids=["missing", "invalid-json", "no-servers", "not-object"])
def test_unusable_config_files_say_why(tmp_path: Path, text: str | None, expected: str) -> None:
    config = tmp_path / "mcp.json"
    if text is not None:
        config.write_text(text)
    with pytest.raises(McpConfigError, match=expected):
        load_mcp_config(config)


def test_credentials_in_an_http_url_are_not_shown() -> None:
    spec = server_spec("t", {"url": "https://user:pa55word@mcp.example.com/mcp"})
    assert spec.describe() == "https://mcp.example.com/mcp"


def test_a_vs_code_mcp_json_with_comments_trailing_commas_and_types(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_TOKEN", "gh-secret")
    (tmp_path / ".env").write_text("DB_URL=postgres://localhost/shop\n# a comment\n")
    config = tmp_path / "mcp.json"
    config.write_text("""\ufeff{
      /* VS Code reads this as JSONC */
      "inputs": [{"type": "promptString", "id": "key"}],
      "servers": {
        "db": {"type": "stdio", "command": "db-server", "args": ["${workspaceFolder}/x"],
               "envFile": "ENV_FILE", "env": {"MODE": "ro"}, "dev": {"watch": "src/**"}},
        "github": {"type": "http", "url": "https://api.example.com/mcp/",
                   "headers": {"Authorization": "Bearer ${env:GH_TOKEN}"}},  // a comment
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9000/sse"},
        "prompted": {"command": "x", "env": {"KEY": "${input:key}"}},
      },
    }""".replace("ENV_FILE", str(tmp_path / ".env")))
    read = read_mcp_config(config)
    assert list(read.servers) == ["db", "github", "legacy"]
    db, github, legacy = read.servers.values()
    assert isinstance(db, StdioServer) and db.env == {"DB_URL": "postgres://localhost/shop",
                                                      "MODE": "ro"}
    assert db.args == [f"{os.getcwd()}/x"]
    assert isinstance(github, HttpServer) and github.headers["Authorization"] == "Bearer gh-secret"
    assert legacy.type == "sse"
    assert read.skipped == {"prompted": "asks for ${input:key}, an input VS Code prompts for; "
                                        "nbagent cannot (use ${env:NAME} instead)"}


def test_one_bad_entry_never_discards_the_others(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {
        "good": {"command": "good-server", "alwaysAllow": ["read"], "timeout": 60},
        "typo": {"command": "x", "argz": []},
        "neither": {"args": []},
        "text": "npx server",
        "off": {"command": "x", "disabled": True},
        "cursor": {"url": "https://mcp.example.com/mcp", "headers": {"X-Key": "k"}},
    }}))
    read = read_mcp_config(config)
    assert list(read.servers) == ["good", "cursor"]
    assert read.servers["good"].always_allow == ["read"]
    assert read.skipped == {"typo": "argz: Extra inputs are not permitted",
                            "neither": "needs 'command' (a program to run over stdio) or 'url' "
                                       "(a streamable HTTP address)",
                            "text": "expected an object with 'command' or 'url', got str",
                            "off": "disabled in the config"}
    assert load_mcp_config(config) == read.servers
    assert read.skipped_lines()[0] == f"the MCP config {config} skips 'typo': argz: Extra " \
                                      "inputs are not permitted"


def test_a_settings_file_with_an_mcp_section(tmp_path: Path) -> None:
    config = tmp_path / "settings.json"
    config.write_text('{"editor.fontSize": 14, "mcp": {"servers": {"a": {"command": "a"}}}}')
    assert list(read_mcp_config(config).servers) == ["a"]


@pytest.mark.parametrize(("key", "off"), list(DISABLED_FORMS.items()))
def test_both_paths_agree_on_every_disabled_form(tmp_path: Path, key: str, off: Any) -> None:
    # a mapping given in code and a config file: one rule (is_disabled), each form of it
    entries = {"off": {"command": "x", key: off}, "on": {"command": "y", key: not off}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": entries}))
    read = read_mcp_config(config)
    assert is_disabled(entries["off"]) and not is_disabled(entries["on"])
    assert list(server_specs(entries)) == list(read.servers) == ["on"]
    assert read.skipped == {"off": "disabled in the config"}
    assert server_specs(entries)["on"] == read.servers["on"]  # the switch key is not a field


@pytest.mark.parametrize("keys", SERVER_KEYS, ids=[".".join(k) for k in SERVER_KEYS])
def test_each_config_format_gives_its_servers(tmp_path: Path, keys: tuple[str, ...]) -> None:
    document: dict[str, Any] = {"a": {"command": "a-server"}}
    for key in reversed(keys):
        document = {"editor.fontSize": 14, key: document}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(document))
    assert list(read_mcp_config(config).servers) == ["a"]


def _taken(alias: str | AliasPath | AliasChoices | None) -> set[str]:
    """The top-level keys an alias reads."""
    if isinstance(alias, str):
        return {alias}
    if isinstance(alias, AliasPath):
        return {str(alias.path[0])}
    if isinstance(alias, AliasChoices):
        return set().union(*(_taken(choice) for choice in alias.choices))
    return set()


def _keys(model: type[BaseModel]) -> set[str]:
    """Every key a spec class takes: each field's name and aliases."""
    return set().union(*({name} | _taken(info.alias) | _taken(info.validation_alias)
                         for name, info in model.model_fields.items()))


@pytest.mark.parametrize("model", [StdioServer, HttpServer], ids=["stdio", "http"])
def test_no_key_a_spec_takes_is_passed_over(model: type[BaseModel]) -> None:
    # server_spec drops a passed-over key before validation: a field whose key stayed in
    # _PASSED_OVER would be ignored, silently, in code and config file alike
    keys = _keys(model)
    assert {"type", "always_allow", "alwaysAllow", "autoApprove"} <= keys
    assert keys.isdisjoint(_PASSED_OVER), keys & _PASSED_OVER


def test_each_passed_over_key_is_accepted_and_changes_nothing() -> None:
    for key in sorted(_PASSED_OVER):
        assert server_spec("a", {"command": "a", key: 1}) == server_spec("a", {"command": "a"})
        assert server_spec("b", {"url": "https://b.example/mcp", key: 1}) == server_spec(
            "b", {"url": "https://b.example/mcp"})


def test_an_option_both_kinds_of_server_take_is_declared_once() -> None:
    # declared on each class, an option forgotten on one is refused there ("Extra inputs
    # are not permitted") for a config file that gives it to that kind of server
    both = (set(StdioServer.model_fields) & set(HttpServer.model_fields)) - {"type"}
    assert both and both <= set(ServerOptions.model_fields)
