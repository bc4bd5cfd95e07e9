"""Where MCP servers are: a spec per server — a command run over stdio, or a streamable
HTTP url — checked by pydantic, and `load_mcp_config` for the JSON file other MCP clients
already use (the `mcpServers` object). Nothing here starts a process or opens a socket.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

CONFIG_SETTING = "NBAGENT_MCP_CONFIG"  # the environment variable naming the config file
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(ValueError):
    """A server spec or a config file that cannot be used; the message says which and why."""


class StdioServer(BaseModel):
    """An MCP server nbagent starts as a child process and talks to over stdin/stdout.

    `env` is added to a minimal inherited environment (PATH, HOME, ...); its values
    (often keys) never appear in a repr or a message.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: str | None = None

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


class HttpServer(BaseModel):
    """An MCP server already running somewhere, reached over streamable HTTP at `url`.

    `headers` (often a bearer token) never appear in a repr or a message.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["http", "streamable-http", "streamableHttp"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict, repr=False)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not re.match(r"^https?://[^/\s]+", url):
            raise ValueError(f"{url!r} is not an http:// or https:// address")
        return url

    def describe(self) -> str:
        return re.sub(r"//[^/@]*@", "//", self.url)  # never show credentials in the url


ServerSpec = StdioServer | HttpServer


def _expand(value: str, where: str) -> str:
    """`${NAME}` and `${NAME:-default}` from the environment, as other MCP clients do."""

    def lookup(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise McpConfigError(f"{where} uses ${{{name}}}, which is not set in the environment")

    return _VARIABLE.sub(lookup, value)


def _expanded(raw: Any, where: str) -> Any:
    if isinstance(raw, str):
        return _expand(raw, where)
    if isinstance(raw, list):
        return [_expanded(item, where) for item in raw]
    if isinstance(raw, dict):
        return {key: _expanded(value, where) for key, value in raw.items()}
    return raw


def server_spec(name: str, raw: ServerSpec | Mapping[str, Any]) -> ServerSpec:
    """One server's spec from its JSON object (`{"command": ..., "args": [...], "env":
    {...}}` or `{"url": ..., "headers": {...}}`); raises `McpConfigError` naming the
    server and the problem."""
    if isinstance(raw, StdioServer | HttpServer):
        return raw
    if not isinstance(raw, Mapping):
        raise McpConfigError(f"MCP server {name!r}: expected an object with 'command' or 'url', "
                             f"got {type(raw).__name__}")
    fields = {key: value for key, value in raw.items() if key != "disabled"}
    kind = fields.get("type")
    if kind == "sse":
        raise McpConfigError(f"MCP server {name!r}: the SSE transport is not supported; use the "
                             "server's streamable HTTP address (often ending in /mcp)")
    if "command" in fields and "url" in fields:
        raise McpConfigError(f"MCP server {name!r}: give either 'command' (stdio) or 'url' "
                             "(HTTP), not both")
    model: type[StdioServer | HttpServer]
    if "url" in fields or kind in ("http", "streamable-http", "streamableHttp"):
        model = HttpServer
    elif "command" in fields or kind == "stdio":
        model = StdioServer
    else:
        raise McpConfigError(f"MCP server {name!r}: needs 'command' (a program to run over "
                             "stdio) or 'url' (a streamable HTTP address)")
    try:
        return model.model_validate(_expanded(fields, f"MCP server {name!r}"))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in error.errors())
        raise McpConfigError(f"MCP server {name!r}: {problems}") from None


def server_specs(servers: Mapping[str, ServerSpec | Mapping[str, Any]]) -> dict[str, ServerSpec]:
    """Every enabled server of a name → spec mapping, checked (`"disabled": true` skips one)."""
    specs: dict[str, ServerSpec] = {}
    for name, raw in servers.items():
        if not isinstance(name, str) or not name.strip():
            raise McpConfigError(f"MCP server names must be non-empty text, got {name!r}")
        if isinstance(raw, Mapping) and raw.get("disabled") is True:
            continue
        specs[name] = server_spec(name, raw)
    return specs


def load_mcp_config(path: str | Path) -> dict[str, ServerSpec]:
    """The MCP servers in a JSON config file of the kind Claude Desktop, Cursor or VS Code
    use: an `mcpServers` (or `servers`) object of name → `{command, args, env}` or
    `{url, headers}`. Raises `McpConfigError` for a missing or malformed file."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise McpConfigError(f"cannot read the MCP config {str(file)!r}: "
                             f"{error.strerror or error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise McpConfigError(f"the MCP config {str(file)!r} is not valid JSON (line "
                             f"{error.lineno}: {error.msg})") from None
    servers = None
    if isinstance(document, dict):
        servers = document.get("mcpServers", document.get("servers"))
    if not isinstance(servers, dict):
        raise McpConfigError(f"the MCP config {str(file)!r} has no 'mcpServers' object")
    return server_specs(servers)
