"""What an MCP server says about a tool, made fit to offer: invisible and control
characters removed from its name, description and schema (and flagged), the description
and the schema bounded, a schema the validator cannot use offered without client-side
checking (a `$ref` we cannot resolve) or not offered (an invalid schema), and a tool that
needs protocol features we lack (task augmentation) left out — each with its reason. The
tool's annotations (MCP's behaviour hints) are kept as the server gave them, for the rules
that read them; nothing here acts on them.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass
from typing import Any

from .._inert_text import strip_hidden

MAX_DESCRIPTION = 2_000  # characters of a tool's description the model reads
MAX_SCHEMA = 12_000  # characters of one tool's input schema (as JSON)
MAX_SERVER = 60_000  # characters of all one server's offered tools (~15,000 tokens)


def _clean(value: Any) -> Any:
    """Every string (keys too) of a JSON value with its hidden characters removed."""
    if isinstance(value, str):
        return strip_hidden(value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {strip_hidden(str(key)): _clean(item) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class Definition:
    """One listed MCP tool as nbagent offers it (or why it does not).

    `remote_name` is the server's own name (calls use it); `name` and `description` are
    cleaned and bounded; `checked` says whether arguments are checked against `schema`
    before a call; `notes` say what was changed, for the user; `fingerprint` identifies
    the definition exactly as the server sent it (a change needs approval again, a
    changed hint too).

    The `*_hint`s are the tool's MCP annotations (`readOnlyHint`, `destructiveHint`,
    `idempotentHint`, `openWorldHint`) as the server sent them, None where it sent none:
    the server's own claims, not checked. A rule that trusts them reads them here, from
    the catalog's definitions, and gives None the protocol's default (read-only False,
    destructive True, idempotent False, open world True)."""

    remote_name: str
    name: str
    description: str
    schema: dict[str, Any]
    checked: bool
    notes: tuple[str, ...]
    skipped: str | None
    fingerprint: str
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    def size(self) -> int:
        """Characters this tool takes in a request (name, description, schema)."""
        return len(self.name) + len(self.description) + len(json.dumps(self.schema))


def fingerprint(remote: Any) -> str:
    """A short hash of a listed tool's whole definition (`mcp_types.Tool`)."""
    raw = remote.model_dump(mode="json", by_alias=True, exclude_none=True)
    digest = hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def definition(remote: Any) -> Definition:
    """What nbagent offers for one listed tool (`mcp_types.Tool`)."""
    notes: list[str] = []
    name = strip_hidden(remote.name)
    raw_text = remote.description or remote.title or ""
    text = strip_hidden(raw_text)
    raw_schema = dict(remote.input_schema or {})
    schema = _clean(raw_schema)
    if name != remote.name or text != raw_text or schema != raw_schema:
        notes.append("invisible or control characters were removed from its "
                     + ", ".join(part for part, changed in (
                         ("name", name != remote.name), ("description", text != raw_text),
                         ("schema", schema != raw_schema)) if changed))
    text = " ".join(text.split())
    if len(text) > MAX_DESCRIPTION:
        notes.append(f"its description was cut from {len(text):,} to {MAX_DESCRIPTION:,} "
                     "characters")
        text = text[:MAX_DESCRIPTION - 1] + "…"
    skipped = _unsupported(remote, schema)
    checked = True
    if skipped is None:
        schema, unresolved = _without_unresolved_refs(schema)
        if unresolved:
            checked = False
            notes.append(f"its arguments go to the server unchecked: its schema refers to "
                         f"{', '.join(repr(ref) for ref in unresolved[:3])}, which cannot be "
                         "resolved here")
    hints = getattr(remote, "annotations", None)  # mcp_types.ToolAnnotations, or None
    return Definition(remote_name=remote.name, name=name or "tool", description=text,
                      schema=schema, checked=checked, notes=tuple(notes), skipped=skipped,
                      fingerprint=fingerprint(remote),
                      read_only_hint=_hint(hints, "read_only_hint"),
                      destructive_hint=_hint(hints, "destructive_hint"),
                      idempotent_hint=_hint(hints, "idempotent_hint"),
                      open_world_hint=_hint(hints, "open_world_hint"))


def _hint(annotations: Any, name: str) -> bool | None:
    """One of a tool's behaviour hints (the SDK's snake_case name), None when not sent."""
    value = getattr(annotations, name, None)
    return value if isinstance(value, bool) else None


def _unsupported(remote: Any, schema: dict[str, Any]) -> str | None:
    """Why a tool cannot be offered at all, or None."""
    execution = getattr(remote, "execution", None)
    if getattr(execution, "task_support", None) == "required":
        return ("it needs task augmentation (execution.taskSupport 'required'), which "
                "nbagent does not support")
    size = len(json.dumps(schema))
    if size > MAX_SCHEMA:
        return f"its input schema takes {size:,} characters (more than {MAX_SCHEMA:,})"
    problem = schema_error(schema)
    if problem:
        return f"its input schema is not a valid JSON schema ({problem})"
    return None


def schema_error(schema: dict[str, Any]) -> str:
    """Why `schema` is not a JSON schema its own dialect accepts ('' when it is)."""
    jsonschema = importlib.import_module("jsonschema")  # untyped; an mcp dependency
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        return str(error.message)[:200]
    except Exception as error:  # a schema so odd the checker itself fails
        return f"{type(error).__name__}"[:200]
    return ""


def _without_unresolved_refs(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`schema` with each `$ref` that points outside it, or to nothing in it, removed
    (that part then accepts anything), and the refs removed. Nothing is fetched: a remote
    `$ref` would make a request the user never asked for."""
    unresolved: list[str] = []

    def walk(value: Any) -> Any:
        if isinstance(value, list):
            return [walk(item) for item in value]
        if not isinstance(value, dict):
            return value
        ref = value.get("$ref")
        out = {key: walk(item) for key, item in value.items() if key != "$ref"}
        if isinstance(ref, str):
            if _resolves(schema, ref):
                out["$ref"] = ref
            else:
                unresolved.append(ref)
        return out

    return walk(schema), unresolved


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    """Whether `ref` is a JSON pointer (`#`, `#/a/b`) to something inside `schema`."""
    if not ref.startswith("#"):
        return False
    node: Any = schema
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True
