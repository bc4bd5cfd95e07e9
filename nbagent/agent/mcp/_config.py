"""Where MCP servers are: a spec per server — a command run over stdio, a streamable HTTP
url, or an SSE url — checked by pydantic, and `read_mcp_config` for the file other MCP
clients already use, read as they read it: Claude Desktop's and Cursor's `mcpServers`, VS
Code's `servers` (JSONC: comments and trailing commas; `type`; `${env:NAME}`, `envFile`),
entry by entry — a usable server loads, an unusable one is named with its reason. Keys
other clients keep beside a server (`disabled`, `alwaysAllow`, `timeout`, ...) are read or
passed over. Nothing here starts a process or opens a socket.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ...engine._exceptions import McpConfigError

# `${NAME}`, `${NAME:-default}` (Claude Code), `${env:NAME}` (VS Code, Cursor)
_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_EDITOR_VARIABLE = re.compile(r"\$\{(userHome|workspaceFolder|pathSeparator)\}")
_INPUT = re.compile(r"\$\{input:([^}]*)\}")
# Keys other clients keep beside a server that change nothing here (Cline's timeout, VS
# Code's dev and gallery fields, a description): passed over rather than refused. A key
# taken into use (a field or an alias of StdioServer or HttpServer) leaves this set: one
# left here is dropped before validation, silently, from code and config file alike
# (test_config checks that no field's key is here).
_PASSED_OVER = {"timeout", "description", "dev", "gallery", "version", "transportType",
                "networkTimeout", "trust", "includeTools", "excludeTools"}
_ALLOW = AliasChoices("alwaysAllow", "autoApprove", "always_allow")


class ServerOptions(BaseModel):
    """What every server's spec may say, whichever its transport: an option declared
    here once is taken by both `StdioServer` and `HttpServer` (declared on one of them, a
    config file's key would be refused for the other kind of server). What only one
    transport has (a command, a url) is that class's own."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    # tools that run without asking (Cline's `alwaysAllow`, Roo's `autoApprove`); True: all
    always_allow: bool | list[str] = Field(False, validation_alias=_ALLOW)


class StdioServer(ServerOptions):
    """An MCP server nbagent starts as a child process and talks to over stdin/stdout.

    `env` is added to a minimal inherited environment (PATH, HOME, ...); its values
    (often keys) never appear in a repr or a message.
    """

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: str | None = None

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


class HttpServer(ServerOptions):
    """An MCP server already running somewhere, reached over streamable HTTP at `url`.

    `headers` (often a bearer token) never appear in a repr or a message.
    """

    type: Literal["http", "streamable-http", "streamableHttp", "sse"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    # sign-in when the server asks for it (OAuth): `false` never; an object gives a client
    # registered beforehand (`clientId`, `clientSecret`, `scope`, `callbackPort`)
    oauth: bool | dict[str, Any] = Field(True, repr=False)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not re.match(r"^https?://[^/\s]+", url):
            raise ValueError(f"{url!r} is not an http:// or https:// address")
        return url

    def describe(self) -> str:
        return re.sub(r"//[^/@]*@", "//", self.url)  # never show credentials in the url


ServerSpec = StdioServer | HttpServer


def identity(spec: ServerSpec) -> str:
    """What a server is, whatever its name: the command with its arguments, working
    directory and environment, or the URL (headers are credentials, not the server).
    What the user allowed belongs to this, so a different server added under an allowed
    server's name is asked about again."""
    if isinstance(spec, HttpServer):
        parts: list[Any] = ["http", spec.type == "sse", spec.url]
    else:
        parts = ["stdio", spec.command, spec.args, spec.cwd, sorted(spec.env.items())]
    return json.dumps(parts)


def _expand(value: str, where: str) -> str:
    """`${NAME}`, `${NAME:-default}` and `${env:NAME}` from the environment, and the
    editors' `${userHome}`, `${workspaceFolder}` (the working directory here), as other MCP
    clients do. `${input:...}` (VS Code asks the user) cannot be filled in here."""

    def lookup(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise McpConfigError(f"{where} uses ${{{name}}}, which is not set in the environment")

    def editor(match: re.Match[str]) -> str:
        return {"userHome": str(Path.home()), "workspaceFolder": os.getcwd(),
                "pathSeparator": os.sep}[match.group(1)]

    if found := _INPUT.search(value):
        raise McpConfigError(f"{where} asks for ${{input:{found.group(1)}}}, an input VS Code "
                             "prompts for; nbagent cannot (use ${env:NAME} instead)")
    return _VARIABLE.sub(lookup, _EDITOR_VARIABLE.sub(editor, value))


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
    fields = {key: value for key, value in raw.items()
              if key not in DISABLED_FORMS and key not in _PASSED_OVER}
    kind = fields.get("type")
    if "envFile" in fields:
        fields["env"] = {**_env_file(name, fields.pop("envFile")), **dict(fields.get("env") or {})}
    if "serverUrl" in fields and "url" not in fields:  # Windsurf's spelling
        fields["url"] = fields.pop("serverUrl")
    if "command" in fields and "url" in fields:
        raise McpConfigError(f"MCP server {name!r}: give either 'command' (stdio) or 'url' "
                             "(HTTP), not both")
    model: type[StdioServer | HttpServer]
    if "url" in fields or kind in ("http", "streamable-http", "streamableHttp", "sse"):
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


def _env_file(name: str, path: Any) -> dict[str, str]:
    """The variables of a stdio server's `envFile` (VS Code, Cursor), read as dotenv."""
    from dotenv import dotenv_values  # a litellm dependency

    file = Path(_expand(str(path), f"MCP server {name!r}")).expanduser()
    if not file.is_file():
        raise McpConfigError(f"MCP server {name!r}: its envFile {str(file)!r} does not exist")
    return {key: value for key, value in dotenv_values(file).items() if value is not None}


# The forms that switch an entry off: key -> the value that does. The one table for both
# paths — a mapping given in code (`server_specs`) and a config file (`read_mcp_config`) —
# and for `server_spec`, which drops these keys: a new form (another client's
# `"enabled": false`) is one row here, never one path only (the other would start a server
# its config marks off).
DISABLED_FORMS: dict[str, Any] = {"disabled": True}


def is_disabled(raw: Any) -> bool:
    """True for an entry its config switches off (any of `DISABLED_FORMS`)."""
    return isinstance(raw, Mapping) and any(
        key in raw and raw[key] is value for key, value in DISABLED_FORMS.items())


def server_specs(servers: Mapping[str, ServerSpec | Mapping[str, Any]]) -> dict[str, ServerSpec]:
    """Every enabled server of a name → spec mapping, checked (`is_disabled` skips
    one); the first unusable one raises `McpConfigError`."""
    specs: dict[str, ServerSpec] = {}
    for name, raw in servers.items():
        if not isinstance(name, str) or not name.strip():
            raise McpConfigError(f"MCP server names must be non-empty text, got {name!r}")
        if is_disabled(raw):
            continue
        specs[name] = server_spec(name, raw)
    return specs


# Where each client's file keeps its servers, one row per format, asked in this order (the
# first that holds something is read): Claude Desktop, Cursor, Windsurf and Claude Code
# (`mcpServers`), VS Code's mcp.json (`servers`), a VS Code settings file (`mcp.servers`).
# A new format that is JSON(C) is one row here and its case in test_config.
SERVER_KEYS: tuple[tuple[str, ...], ...] = (("mcpServers",), ("servers",), ("mcp", "servers"))


def _servers_object(quote: str) -> str:
    """Where a config keeps its servers, in words, from `SERVER_KEYS`."""
    first, *others = (f"{quote}{'.'.join(keys)}{quote}" for keys in SERVER_KEYS)
    return f"{first} object" + (f" (or {', or '.join(others)})" if others else "")


# The one wording of the file's shape: the `mcp_config` setting's description and the
# error for a file without servers say it; docstrings point here rather than list the keys.
MCP_CONFIG_SHAPE = f"a JSON file (comments allowed) with an {_servers_object('`')}"


def _at(document: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        document = document.get(key) if isinstance(document, dict) else None
    return document


@dataclass(frozen=True)
class McpConfig:
    """A config file as read: the usable `servers`, and each entry `skipped` with why."""

    path: str
    servers: dict[str, ServerSpec] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def skipped_lines(self) -> list[str]:
        return [f"the MCP config {self.path} skips {name!r}: {why}"
                for name, why in self.skipped.items()]


def read_mcp_config(path: str | Path) -> McpConfig:
    """The MCP servers in a config file of the kind Claude Desktop, Cursor or VS Code
    use, entry by entry: an `mcpServers` (or VS Code's `servers`, or a settings file's
    `mcp.servers`) object of name → `{command, args, env}` or `{url, headers}`; JSON with
    comments and trailing commas allowed. Raises `McpConfigError` only for a file that
    cannot be read at all; an unusable entry is in `skipped` with its reason."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise McpConfigError(f"cannot read the MCP config {str(file)!r}: "
                             f"{error.strerror or error}") from None
    import json5  # only where a config file is read

    try:
        document = json5.loads(text)  # JSONC, as VS Code reads mcp.json
    except ValueError as error:
        raise McpConfigError(f"the MCP config {str(file)!r} is not valid JSON "
                             f"({error})") from None
    servers = next((found for keys in SERVER_KEYS
                    if (found := _at(document, keys)) is not None), None)
    if not isinstance(servers, dict):
        where = _servers_object(quote="'")
        raise McpConfigError(f"the MCP config {str(file)!r} has no {where}")
    config = McpConfig(str(file))
    for name, raw in servers.items():
        if not isinstance(name, str) or not name.strip():
            config.skipped[str(name)] = "a server name must be non-empty text"
        elif is_disabled(raw):
            config.skipped[name] = "disabled in the config"
        else:
            try:
                config.servers[name] = server_spec(name, raw)
            except McpConfigError as error:
                prefix = f"MCP server {name!r}"
                reason = str(error).removeprefix(f"{prefix}: ").removeprefix(f"{prefix} ")
                config.skipped[name] = reason
    return config


def load_mcp_config(path: str | Path) -> dict[str, ServerSpec]:
    """The usable MCP servers of a config file (see `read_mcp_config`, which also says
    which entries were skipped and why). Raises `McpConfigError` for a file that cannot
    be read."""
    return read_mcp_config(path).servers
