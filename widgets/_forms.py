"""What the longer `%nbagent` subcommands do (their rows are `_subcommands.SUBCOMMANDS`):
what runs without asking (`allow code`, `revoke code | mcp NAME [TOOL] | all`), the MCP
servers of the session (`mcp add NAME -- command args…`, `mcp add NAME URL`, `mcp list` —
each server's live state, its tools and everything they tell the model, parameter
descriptions included —, `mcp allow NAME [TOOL]`, `mcp remove NAME`) and the local models
found on this machine (`models`). Each is one call into nbagent's public API and returns
the lines to show; input it cannot take raises `Misuse`, which the dispatch answers with
the row's own usage.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import Any

import nbagent
from nbagent.events import Notice


class Misuse(Exception):  # noqa: N818  (a reason, not an error of ours)
    """Words a subcommand cannot take: the reason; `_subcommands.run` adds the usage."""


def mcp_spec(rest: str) -> tuple[str, dict[str, Any]]:
    """`NAME -- command args…` or `NAME URL` as (name, the `mcpServers` entry)."""
    name, _, after = rest.strip().partition(" ")
    after = after.strip()
    if not name or not after:
        raise Misuse("expected a server name and how to reach it")
    if after == "--" or after.startswith("-- "):
        try:
            command = shlex.split(after[2:])
        except ValueError as error:
            raise Misuse(str(error)) from None
        if not command:
            raise Misuse(f"which command starts server {name}? (after --)")
        return name, {"command": command[0], "args": command[1:]}
    if " " in after or "://" not in after:
        raise Misuse(f"give server {name} a URL (http://…), or the command after --")
    return name, {"url": after}


# What a schema says in words, beside its structure: each is shown where it stands, so an
# instruction a server put in a parameter's description, default or choices is in front
# of the user as it is in front of the model.
_WORDS = ("title", "description", "default", "const", "enum", "examples", "pattern", "format")
_NESTED = ("properties", "$defs", "definitions", "patternProperties")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains")


def parameter_lines(schema: Any, path: str = "", required: bool = False) -> list[str]:
    """One line per part of a tool's input schema that says something in words: its
    place (`a`, `a.b`, `a[]`), type, whether it is required, and every word it carries
    (description, title, default, choices, examples, …), nested parts included."""
    if not isinstance(schema, dict):
        return []
    lines = []
    said = [f"{key} {schema[key]!r}" if key != "description" else str(schema[key])
            for key in _WORDS if key in schema and not (key == "title" and path.endswith(
                str(schema[key])))]
    if path and (said or "type" in schema):
        kind = schema.get("type", "")
        what = ", ".join(str(part) for part in (
            "/".join(kind) if isinstance(kind, list) else kind,
            "required" if required else "") if part)
        lines.append(f"{path}{f' ({what})' if what else ''}: {'; '.join(said) or '—'}")
    needed = set(schema.get("required") or [])
    for key in _NESTED:
        if isinstance(schema.get(key), dict):
            for name, part in schema[key].items():
                where = name if key == "properties" else f"{key}.{name}"
                lines += parameter_lines(part, f"{path}.{where}" if path else where,
                                         key == "properties" and name in needed)
    for key in _LISTS:
        if isinstance(schema.get(key), list):
            for n, part in enumerate(schema[key]):
                lines += parameter_lines(part, f"{path or '(arguments)'}.{key}[{n}]")
    for key in _ONE:
        if isinstance(schema.get(key), dict):
            suffix = "[]" if key == "items" else f".{key}"
            lines += parameter_lines(schema[key], f"{path or '(arguments)'}{suffix}")
    return lines


def server_lines(agent: Any) -> str:
    """Each server's live state (it is started to know it) and, under it, each of its
    tools with the description the model reads, every word of its parameters (their
    descriptions, defaults, choices…) and what was changed in it."""
    servers = agent.mcp_servers(start=True)
    if not servers:
        return "nbagent: no MCP servers in this session (add one: %nbagent mcp add NAME …)"
    offered = agent.tools
    lines = []
    for name, status, tools in servers:
        names = ", ".join(tools) if tools else "no tools"
        lines.append(f"{name}: {status} · {names}")
        for tool in tools:
            made = offered.get(tool)
            if made is None:
                continue
            lines.append(f"  {tool}: {made.description}")
            lines.extend(f"    · {line}" for line in parameter_lines(
                getattr(made, "input_schema", None) or {}))
            lines.extend(f"    ! {note}" for note in getattr(made, "notes", ()))
    return "\n".join(lines)


def mcp_form(agent: Any, form: Callable[[], str]) -> str:
    """Run one `%nbagent mcp …` form; returns the lines to show: what the servers said
    meanwhile (a tool left out, a change, a restart), then the answer. A server that could
    not start is said once, by its state in the listing."""
    said: list[str] = []

    def keep(event: object) -> None:
        if isinstance(event, Notice) and "could not start" not in event.text:
            said.append(f"nbagent: {event.text}")

    agent.events.subscribe(keep)
    try:
        shown = form()
    except (ValueError, KeyError) as error:  # a bad spec, an unknown name: the user's input
        message = error.args[0] if error.args else str(error)
        raise Misuse(str(message)) from None
    finally:
        agent.events.unsubscribe(keep)
    return "\n".join([*said, shown])


def mcp_add(agent: Any, rest: str) -> str:
    name, spec = mcp_spec(rest)

    def add() -> str:
        agent.add_mcp_server(name, spec)
        return server_lines(agent)
    return mcp_form(agent, add)


def mcp_list(agent: Any, rest: str) -> str:
    return mcp_form(agent, lambda: server_lines(agent))


def mcp_remove(agent: Any, rest: str) -> str:
    if not rest or " " in rest:
        raise Misuse("expected one server name")

    def remove() -> str:
        agent.remove_mcp_server(rest)
        return f"nbagent: MCP server {rest} removed\n{server_lines(agent)}"
    return mcp_form(agent, remove)


def mcp_allow(agent: Any, rest: str) -> str:
    words = rest.split()
    if not 1 <= len(words) <= 2:
        raise Misuse("expected a server name and maybe one tool")

    def allow() -> str:
        if words[0] not in [server for server, _, _ in agent.mcp_servers()]:
            raise KeyError(f"no MCP server named {words[0]!r}")
        tool = agent.tools.get(words[-1]) if len(words) == 2 else None
        if tool is not None and getattr(tool, "server", None) == words[0]:
            words[1] = tool.remote_name  # the name it is offered as: the server's own
        agent.approval.allow("mcp", *words)
        what = f"{words[1]} of {words[0]}" if len(words) == 2 else f"every tool of {words[0]}"
        return f"nbagent: {what} runs without asking for the rest of this session"
    return mcp_form(agent, allow)


def allow_code(agent: Any, rest: str) -> str:
    """`%nbagent allow code`: all code the model runs, this session (the `a` answer)."""
    from nbagent.approval import CODE_SCOPE, scope_words

    agent.approval.allow(*CODE_SCOPE)
    return _still_auto(agent, f"{scope_words(CODE_SCOPE)} runs without asking for the rest "
                       "of this session")


def revoke_code(agent: Any, rest: str) -> str:
    return _revoke(agent, ("code",))


def revoke_all(agent: Any, rest: str) -> str:
    return _revoke(agent, ())


def revoke_mcp(agent: Any, rest: str) -> str:
    words = rest.split()
    if not 1 <= len(words) <= 2:
        raise Misuse("expected a server name and maybe one tool")
    return _revoke(agent, ("mcp", *words))


def _revoke(agent: Any, scope: tuple[str, ...]) -> str:
    """What was allowed under `scope` (all of it for `()`) asks again; says what did."""
    from nbagent.approval import scope_words

    gone = agent.approval.revoke(*scope)
    return _still_auto(agent, f"taken back, asks again: {'; '.join(map(scope_words, gone))}"
                       if gone else f"nothing allowed was under {' '.join(scope) or 'all'}")


def _still_auto(agent: Any, said: str) -> str:
    if agent.settings().run_code == "auto":  # what was allowed does not matter then
        said += " (run_code=auto still runs all code without asking: %nbagent run_code=ask)"
    return f"nbagent: {said}"


def models(refresh: bool = False) -> str:
    """`%nbagent models [--refresh]`: the local models found, with their window (and where
    it came from), tool support and the command that uses each; says when the answer is
    an earlier look's."""
    found = nbagent.find_local_models(refresh=refresh)
    lines = [f"{model.describe()}\n  use it: {model.call}" for model in found] or [
        f"nbagent: no local model server or model file found ({found.looked_for})"]
    if found.cached:
        minutes = max(0, round((time.time() - found.looked_at) / 60))
        lines.append(f"nbagent: as found {minutes} min ago (%nbagent models --refresh looks "
                     "again)")
    return "\n".join(lines)
