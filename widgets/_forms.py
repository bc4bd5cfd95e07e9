"""The forms of `%nbagent` beyond key=value settings: what runs without asking (`allow
code`, `revoke code | mcp NAME [TOOL] | all`), the MCP servers of the session
(`mcp add NAME -- command args…`, `mcp add NAME URL`, `mcp list` — each server's live
state, its tools and everything they tell the model, parameter descriptions included —,
`mcp allow NAME [TOOL]`, `mcp remove NAME`) and the local models found on this machine
(`models`). Each form is one call into nbagent's public API; a call this version of
nbagent does not have is said in one line.
"""

from __future__ import annotations

import shlex
import time
from typing import Any

from IPython.core.error import UsageError

import nbagent
from nbagent.events import Notice

MCP_USAGE = ("%nbagent mcp add NAME -- command args… · %nbagent mcp add NAME URL · "
             "%nbagent mcp list · %nbagent mcp allow NAME [TOOL] · %nbagent mcp remove NAME")


def mcp_spec(rest: str) -> tuple[str, dict[str, Any]]:
    """`NAME -- command args…` or `NAME URL` as (name, the `mcpServers` entry)."""
    name, _, after = rest.strip().partition(" ")
    after = after.strip()
    if not name or not after:
        raise UsageError(f"Expected a server name and how to reach it: {MCP_USAGE}")
    if after == "--" or after.startswith("-- "):
        try:
            command = shlex.split(after[2:])
        except ValueError as error:
            raise UsageError(f"%nbagent mcp add: {error}") from None
        if not command:
            raise UsageError(f"%nbagent mcp add {name} --: which command starts the server?")
        return name, {"command": command[0], "args": command[1:]}
    if " " in after or "://" not in after:
        raise UsageError(f"%nbagent mcp add {name}: give a URL (http://…), or the command "
                         f"after --: {MCP_USAGE}")
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


def mcp(agent: Any, rest: str) -> str:
    """Run one `%nbagent mcp …` form; returns the lines to show: what the servers said
    meanwhile (a tool left out, a change, a restart), then the answer. A server that could
    not start is said once, by its state in the listing."""
    said: list[str] = []

    def keep(event: object) -> None:
        if isinstance(event, Notice) and "could not start" not in event.text:
            said.append(f"nbagent: {event.text}")

    agent.events.subscribe(keep)
    try:
        shown = _mcp(agent, rest)
    except (ValueError, KeyError) as error:  # a bad spec, an unknown name: the user's input
        message = error.args[0] if error.args else str(error)
        raise UsageError(f"%nbagent mcp: {message}") from None
    finally:
        agent.events.unsubscribe(keep)
    return "\n".join([*said, shown])


def _mcp(agent: Any, rest: str) -> str:
    verb, _, after = rest.strip().partition(" ")
    if verb == "add":
        name, spec = mcp_spec(after)
        agent.add_mcp_server(name, spec)
        return server_lines(agent)
    if verb == "remove":
        name = after.strip()
        if not name or " " in name:
            raise UsageError(f"Expected one server name: {MCP_USAGE}")
        agent.remove_mcp_server(name)
        return f"nbagent: MCP server {name} removed\n{server_lines(agent)}"
    if verb == "list" and not after.strip() or not verb:
        return server_lines(agent)
    if verb == "allow":
        words = after.split()
        if not 1 <= len(words) <= 2:
            raise UsageError(f"Expected a server name and maybe one tool: {MCP_USAGE}")
        if words[0] not in [server for server, _, _ in agent.mcp_servers()]:
            raise KeyError(f"no MCP server named {words[0]!r}")
        tool = agent.tools.get(words[-1]) if len(words) == 2 else None
        if tool is not None and getattr(tool, "server", None) == words[0]:
            words[1] = tool.remote_name  # the name it is offered as: the server's own
        agent.approval.allow("mcp", *words)
        what = f"{words[1]} of {words[0]}" if len(words) == 2 else f"every tool of {words[0]}"
        return f"nbagent: {what} runs without asking for the rest of this session"
    raise UsageError(f"Expected one of: {MCP_USAGE}")


APPROVAL_USAGE = ("%nbagent allow code · %nbagent revoke code · %nbagent revoke mcp NAME "
                  "[TOOL] · %nbagent revoke all")


def approvals(agent: Any, verb: str, words: list[str]) -> str:
    """`%nbagent allow code` (all code the model runs, this session: the `a` answer) and
    `%nbagent revoke code | mcp NAME [TOOL] | all` (what was allowed asks again); returns
    the line saying what runs without asking now."""
    from nbagent.approval import CODE_SCOPE, scope_words

    if verb == "allow":
        if words != ["code"]:
            raise UsageError(f"Expected: {APPROVAL_USAGE} (an MCP server: %nbagent mcp allow)")
        agent.approval.allow(*CODE_SCOPE)
        said = f"{scope_words(CODE_SCOPE)} runs without asking for the rest of this session"
    else:
        if words == ["all"]:
            scope: tuple[str, ...] = ()
        elif words == ["code"] or words[:1] == ["mcp"] and 2 <= len(words) <= 3:
            scope = tuple(words)
        else:
            raise UsageError(f"Expected: {APPROVAL_USAGE}")
        gone = agent.approval.revoke(*scope)
        said = (f"taken back, asks again: {'; '.join(scope_words(s) for s in gone)}" if gone
                else f"nothing allowed was under {' '.join(words)}")
    if agent.settings().run_code == "auto":
        said += " (run_code=auto still runs all code without asking: %nbagent run_code=ask)"
    return f"nbagent: {said}"


def models(refresh: bool = False) -> str:
    """`%nbagent models [--refresh]`: the local models found, with their window (and where
    it came from), tool support and the command that uses each; says when the answer is
    an earlier look's."""
    found = nbagent.find_local_models(refresh=refresh)
    lines = [f"{model.describe()}\n  use it: {model.call}" for model in found] or [
        "nbagent: no local model server or model file found (Ollama, LM Studio, llama.cpp, "
        "vLLM, llama-cpp-python on their default ports; GGUF files in the usual caches)"]
    if found.cached:
        minutes = max(0, round((time.time() - found.looked_at) / 60))
        lines.append(f"nbagent: as found {minutes} min ago (%nbagent models --refresh looks "
                     "again)")
    return "\n".join(lines)


def settings_changes(words: list[str]) -> dict[str, str]:
    changes: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            raise UsageError("Expected key=value (model=…, run_code=ask|auto|off, …), "
                             "'reset', 'meter', 'models', 'cells', 'allow …', 'revoke …' or "
                             "'mcp …'; "
                             f"got {word!r}.")
        changes[key] = value
    return changes
