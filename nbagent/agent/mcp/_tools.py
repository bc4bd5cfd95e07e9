"""MCP server tools as nbagent `Tool`s: the schema sent to the model is the server's own
input schema (cleaned and bounded by `_definitions`); arguments are checked against it
before the call, unless the schema cannot be used for that; names are made valid for every
provider and kept bare unless two servers (or a built-in) share one, then `server__tool`.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from ...engine._exceptions import McpToolError
from ..tools._tool import Tool
from ._definitions import Definition

MAX_NAME = 64  # the longest tool name OpenAI and Anthropic accept
_INVALID = re.compile(r"[^A-Za-z0-9_-]+")


class McpArguments(BaseModel):
    """Arguments for an MCP tool: any JSON object its server's schema accepts."""

    model_config = ConfigDict(extra="allow")
    input_schema: ClassVar[dict[str, Any]] = {}

    @model_validator(mode="before")
    @classmethod
    def _follows_schema(cls, data: Any) -> Any:
        problems = schema_problems(cls.input_schema, data)
        if problems:
            raise ValueError(problems)
        return data


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    jsonschema = importlib.import_module("jsonschema")  # untyped; an mcp dependency
    schema = json.loads(schema_text)
    kind = jsonschema.validators.validator_for(schema)
    try:
        kind.check_schema(schema)
    except jsonschema.SchemaError:
        return None  # a schema we cannot read: the server checks the arguments itself
    return kind(schema)


def schema_problems(schema: Mapping[str, Any], data: Any) -> str:
    """What is wrong with `data` for a JSON schema, in one line ('' when nothing)."""
    if not schema:
        return ""
    validator = _validator(json.dumps(schema, sort_keys=True, default=str))
    if validator is None:
        return ""
    try:
        errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.path])
    except Exception:  # a schema the validator cannot follow (an unresolvable reference,
        return ""      # a recursion): the server checks the arguments itself
    return "; ".join(f"{'.'.join(map(str, e.path)) or 'arguments'}: {e.message}"
                     for e in errors[:5])


def arguments_model(name: str, schema: Mapping[str, Any]) -> type[McpArguments]:
    """A permissive arguments model that checks against `schema`."""
    made = type(f"{name}_arguments", (McpArguments,),
                {"input_schema": dict(schema), "__module__": __name__})
    return made


@dataclass
class McpTool(Tool):
    """A tool served by an MCP server; `remote_name` is its name on the server."""

    server: str = ""
    remote_name: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    checked: bool = True  # the arguments are checked against `input_schema` before a call
    fingerprint: str = ""  # the definition as the server sent it (see `_definitions`)
    notes: tuple[str, ...] = ()  # what was changed in it before it was offered

    @functools.cached_property
    def schema(self) -> dict[str, Any]:
        parameters = copy.deepcopy(self.input_schema) or {"type": "object", "properties": {}}
        parameters.pop("title", None)
        parameters.pop("$schema", None)
        for prop in parameters.get("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        parameters.setdefault("type", "object")
        if parameters.get("type") == "object":
            parameters.setdefault("properties", {})
        return {"type": "function",
                "function": {"name": self.name, "description": self.description,
                             "parameters": parameters}}


def valid_name(text: str) -> str:
    """`text` as a tool name every provider accepts (letters, digits, _ and -; at most 64)."""
    cleaned = _INVALID.sub("_", text).strip("_") or "tool"
    return cleaned[:MAX_NAME]


def tool_names(listing: Mapping[str, Sequence[str]],
               reserved: Collection[str] = ()) -> dict[tuple[str, str], str]:
    """The name the model sees for each (server, tool): the tool's own name when no other
    server (and no name in `reserved`) has it, else `server__tool`; stable for the same
    input, and never two alike."""
    bare = Counter(valid_name(tool) for tools in listing.values() for tool in set(tools))
    taken = set(reserved)
    names: dict[tuple[str, str], str] = {}
    for server, tools in listing.items():
        for tool in tools:
            name = valid_name(tool)
            if bare[name] > 1 or name in taken:
                name = valid_name(f"{valid_name(server)[:24]}__{name}")
            candidate, n = name, 2
            while candidate in taken:
                suffix = f"_{n}"
                candidate, n = name[:MAX_NAME - len(suffix)] + suffix, n + 1
            taken.add(candidate)
            names[(server, tool)] = candidate
    return names


def make_tool(name: str, server: str, offered: Definition,
              call: Callable[[str, str, dict[str, Any]], tuple[str, bool]]) -> McpTool:
    """A `Tool` for one listed MCP tool as offered (`offered`, from `_definitions`);
    `call(server, tool, arguments)` returns (text, is_error)."""
    schema = offered.schema
    remote_name = offered.remote_name

    def run(**arguments: Any) -> str:
        text, is_error = call(server, remote_name, arguments)
        if is_error:
            raise McpToolError(text)
        return text

    run.__name__ = name
    return McpTool(
        name=name,
        description=offered.description or f"{offered.name} (from the MCP server {server})",
        function=run, arguments=arguments_model(name, schema if offered.checked else {}),
        server=server, remote_name=remote_name, input_schema=schema,
        checked=offered.checked, fingerprint=offered.fingerprint, notes=offered.notes,
    )
