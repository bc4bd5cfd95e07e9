"""A server's request for input (MCP elicitation), asked of the user through the session's
one way of asking (`Approval.ask`: the front end's input box in a kernel): first whether
to answer at all, then each requested field as a prompt typed by its schema (text,
number, integer, yes/no, one or several of a list), then the answer shown whole before it
is sent. An empty or unknown answer to either question sends nothing (cancel); `n`
declines; where no one can answer, the request is refused with an error the server reads.

What the server wrote (its message, its field names and descriptions) is shown with every
invisible or control character written out (`visible`), and the question says so. The
server, not nbagent, gets what the user types: the question says that too.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from .._asking import USER_CLOCK, NoOneToAsk
from .._inert_text import hidden_in, visible

MAX_TRIES = 3  # a field answered wrongly this often cancels the request
MAX_MESSAGE = 4_000  # characters of the server's message shown (the rest is counted)
_LISTED = 10  # fields named in the first question
_YES = {"y", "yes", "true", "1"}
_NO = {"n", "no", "false", "0"}
_NONE = object()  # a field without a default

Ask = Callable[[str], str]
Say = Callable[[str], None]


@dataclass
class Field:
    """One requested field: its name, what it is (`kind`) and its bounds (`schema`)."""

    name: str
    label: str  # the title or name, and the description, as shown
    kind: str  # string, number, integer, boolean, choice, choices
    schema: dict[str, Any]
    required: bool
    default: Any = _NONE
    options: list[tuple[Any, str]] = field(default_factory=list)  # (value, label) to choose

    def prompt(self, problem: str = "") -> str:
        """The prompt for this field (with why the last answer was not taken)."""
        hint = {"string": "text", "number": "a number", "integer": "a whole number",
                "boolean": "yes or no"}.get(self.kind, "")
        if self.options:
            numbered = ", ".join(f"{n} {label}" for n, (_, label) in
                                 enumerate(self.options, 1))
            hint = (f"one of: {numbered}" if self.kind == "choice" else
                    f"any of: {numbered}, separated by commas")
        if self.default is not _NONE:
            hint += f"; Enter for {_shown_value(self.default, self)}"
        elif self.required:
            hint += "; needed"
        else:
            hint += "; Enter to leave it out"
        again = f"  ({problem}; try again)\n" if problem else ""
        return f"{again}  {self.label} ({hint}): "

    def parse(self, typed: str) -> Any:
        """The value the typed text stands for; raises `ValueError` saying why not."""
        text = typed.strip()
        if self.kind == "boolean":
            if text.lower() in _YES:
                return True
            if text.lower() in _NO:
                return False
            raise ValueError("answer yes or no")
        if self.kind in ("integer", "number"):
            try:
                return int(text) if self.kind == "integer" or text.lstrip("+-").isdigit() \
                    else float(text)
            except ValueError:
                raise ValueError(f"{text!r} is not "
                                 f"{'a whole number' if self.kind == 'integer' else 'a number'}"
                                 ) from None
        if self.kind == "choice":
            return self._option(text)
        if self.kind == "choices":
            return [self._option(part.strip()) for part in text.split(",") if part.strip()]
        return typed

    def _option(self, text: str) -> Any:
        if text.isdigit() and 1 <= int(text) <= len(self.options):
            return self.options[int(text) - 1][0]
        for value, label in self.options:  # by value or label, as typed in any case
            if text.casefold() in (str(value).casefold(), label.casefold()):
                return value
        raise ValueError(f"{text!r} is not one of the choices")


def fields(schema: dict[str, Any]) -> list[Field]:
    """The fields of a requested schema (a flat object of primitive properties), in order."""
    required = set(schema.get("required") or [])
    made = []
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        title = str(prop.get("title") or name)
        label = visible(title if title.casefold() == str(name).casefold()
                        else f"{title} [{name}]")
        if prop.get("description"):
            label += f" — {visible(str(prop['description']))}"
        kind, options = _kind(prop)
        made.append(Field(str(name), label, kind, prop, name in required,
                          prop.get("default", _NONE), options))
    return made


def _kind(prop: dict[str, Any]) -> tuple[str, list[tuple[Any, str]]]:
    if prop.get("type") == "array":
        items = prop.get("items")
        return "choices", _options(items if isinstance(items, dict) else {})
    options = _options(prop)
    if options:
        return "choice", options
    kind = prop.get("type")
    return (kind if kind in ("number", "integer", "boolean") else "string"), []


def _options(prop: dict[str, Any]) -> list[tuple[Any, str]]:
    """(value, label) of an enum (with the older `enumNames`) or of a oneOf/anyOf of
    consts with titles."""
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(prop["enum"]) \
            else prop["enum"]
        return [(value, visible(str(label))) for value, label in zip(prop["enum"], labels,
                                                                    strict=True)]
    choices = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(choices, list):
        return [(c["const"], visible(str(c.get("title", c["const"]))))
                for c in choices if isinstance(c, dict) and "const" in c]
    return []


def _shown_value(value: Any, made: Field) -> str:
    if made.kind == "boolean" and isinstance(value, bool):
        return "yes" if value else "no"
    return visible(json.dumps(value, ensure_ascii=False))


def _problem(schema: dict[str, Any], value: Any) -> str:
    """Why `value` does not fit the field's own schema ('' when it does)."""
    jsonschema = importlib.import_module("jsonschema")  # untyped; an mcp dependency
    try:
        checker = jsonschema.validators.validator_for(schema)(schema)
        error = next(iter(checker.iter_errors(value)), None)
    except Exception:  # a schema the validator cannot read: the server checks it
        return ""
    return "" if error is None else str(error.message)[:200]


def _asked(ask: Ask, question: str) -> str:
    with USER_CLOCK.waiting():  # the user's time never counts against the call's limit
        return str(ask(question))


def answer(params: Any, *, server: str, tool: str | None, ask: Ask | None,
           say: Say) -> types.ElicitResult | types.ErrorData:
    """Put a server's request for input (`ElicitRequestFormParams` or `…URLParams`) to the
    user through `ask`; what the user chose, or an error where no one can answer."""
    during = f" (during its tool {visible(tool)})" if tool else ""
    if ask is None:
        say(f"MCP server {server!r} asked for your input{during}; this session asks no one, "
            "so it was refused")
        return _refused("this session asks no one")
    try:
        return _answer(params, server, during, ask)
    except NoOneToAsk:
        say(f"MCP server {server!r} asked for your input{during}; no one can answer here, "
            "so it was refused")
        return _refused("no one can answer here (a batch run?)")
    except (KeyboardInterrupt, Exception):  # noqa: B014 -- an interrupt or a broken ask
        return types.ElicitResult(action="cancel")


def _refused(why: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST,
                           message=f"nbagent cannot ask the user for input: {why}")


def _header(server: str, during: str, message: str) -> str:
    shown = visible(message[:MAX_MESSAGE])
    if len(message) > MAX_MESSAGE:
        shown += f"… ({len(message) - MAX_MESSAGE:,} more characters not shown)"
    flagged = hidden_in(message)
    warning = (f"\n  (its message carries invisible or control characters, written out as "
               f"⟨U+…⟩: {', '.join(flagged[:5])})" if flagged else "")
    return (f"nbagent: the MCP server {server!r} asks you for input{during} — the server, "
            f"not nbagent, gets what you type:\n  {shown}{warning}\n")


def _choice(text: str) -> str:
    word = text.strip().lower()
    return "accept" if word in ("y", "yes") else "decline" if word in ("n", "no") \
        else "cancel"


def _answer(params: Any, server: str, during: str,
            ask: Ask) -> types.ElicitResult | types.ErrorData:
    header = _header(server, during, str(getattr(params, "message", "") or ""))
    if isinstance(params, types.ElicitRequestURLParams):
        chosen = _choice(_asked(ask, f"{header}  It asks you to open: {visible(params.url)}\n"
                                      "Open it yourself, then: [y] done · [n] decline · "
                                      "[c] cancel: "))
        return types.ElicitResult(action=chosen)
    asked = fields(dict(getattr(params, "requested_schema", None) or {}))
    names = ", ".join(f.name for f in asked[:_LISTED]) + (
        f" and {len(asked) - _LISTED} more" if len(asked) > _LISTED else "")
    listing = f"  It asks for: {visible(names)}\n" if asked else ""
    start = "[y] fill them in" if asked else "[y] accept"
    chosen = _choice(_asked(ask, f"{header}{listing}Answer? {start} · [n] decline · "
                                 "[c] cancel: "))
    if chosen != "accept":
        return types.ElicitResult(action=chosen)
    content: dict[str, Any] = {}
    for made in asked:
        value = _field(made, ask)
        if value is None:
            return types.ElicitResult(action="cancel")
        if value is not _NONE:
            content[made.name] = value
    shown = visible(json.dumps(content, ensure_ascii=False))
    chosen = _choice(_asked(ask, f"nbagent: send to the MCP server {server!r}: {shown}\n"
                                 "Send? [y] send · [n] decline · [c] cancel: "))
    if chosen != "accept":
        return types.ElicitResult(action=chosen)
    return types.ElicitResult(action="accept", content=content)


def _field(made: Field, ask: Ask) -> Any:
    """The field's value, `_NONE` to leave it out, or None after `MAX_TRIES` wrong answers."""
    problem = ""
    for _ in range(MAX_TRIES):
        typed = _asked(ask, made.prompt(problem))
        if not typed.strip():
            if made.default is not _NONE:
                return made.default
            if not made.required:
                return _NONE
            problem = "this one is needed"
            continue
        try:
            value = made.parse(typed)
        except ValueError as error:
            problem = str(error)
            continue
        problem = _problem(made.schema, value)
        if not problem:
            return value
    return None
