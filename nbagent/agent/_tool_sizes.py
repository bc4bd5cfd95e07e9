"""Tool schemas sized to the window: at a small window the schemas offered shrink to at most
`TOOLS_SHARE` of the effective window — first to their lean form (the first sentence of
each description, each argument's name and type: what the embedded model is shown), then to
a leaner one (a short description, the required arguments only), then, still over, the
built-ins that are not `essential` (the built-in table says which are) are left out, the
latest offered first and those that run code last.
A tool left out still runs when the model calls it. `%context` says what they cost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine import _figures as figures
from .tools._builtin import BUILTIN_TOOLS

Schema = dict[str, Any]
TOOLS_SHARE = 0.15  # the most the tool schemas may take of the effective window
SHORT_DESCRIPTION = 80  # characters of a description in the leaner form, at most
_FIRST_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)", re.DOTALL)
_KEPT_KEYS = ("type", "enum", "items")  # what an argument keeps of its schema


@dataclass(frozen=True)
class SizedTools:
    """The schemas offered and how they were sized (`form`: "full", "lean" or "leaner";
    `left_out`: the tools not offered), with what the full schemas would cost."""

    schemas: list[Schema]
    form: str
    left_out: tuple[str, ...]
    tokens: int
    full_tokens: int

    def words(self) -> str:
        """What `%context` says of them: "" when offered in full."""
        if self.form == "full":
            return ""
        text = (f"{self.form} form to fit {figures.percent(100 * TOOLS_SHARE)} of the window "
                f"({figures.count(self.full_tokens)} in full)")
        if self.left_out:
            text += f"; not offered: {', '.join(self.left_out)}"
        return text


def lean_schema(schema: Schema, *, leaner: bool = False) -> Schema:
    """A tool schema in its lean form: the first sentence of its description and each
    argument's type (no descriptions, defaults or titles); `leaner`: the description cut
    to `SHORT_DESCRIPTION` characters and only the required arguments."""
    function = schema.get("function", schema)
    parameters = function.get("parameters") or {}
    required = [str(name) for name in parameters.get("required") or ()]
    properties = {
        name: {key: value for key, value in (spec or {}).items() if key in _KEPT_KEYS}
        for name, spec in (parameters.get("properties") or {}).items()
        if not leaner or name in required}
    description = " ".join(str(function.get("description") or "").split())
    match = _FIRST_SENTENCE.match(description)
    description = match.group(1) if match else description
    if leaner and len(description) > SHORT_DESCRIPTION:
        description = description[:SHORT_DESCRIPTION].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    lean: Schema = {"type": "object", "properties": properties}
    if required:
        lean["required"] = required
    return {"type": "function",
            "function": {"name": function["name"], "description": description,
                         "parameters": lean}}


def sized_tools(schemas: Sequence[Schema], budget: int,
                cost: Callable[[list[Schema]], int]) -> SizedTools:
    """`schemas` within `budget` tokens (`cost` counts a list as the model is shown it):
    as they are, lean, leaner, then with tools left out (see the module docstring)."""
    full = list(schemas)
    full_tokens = cost(full)
    if full_tokens <= budget:
        return SizedTools(full, "full", (), full_tokens, full_tokens)
    form, offered, tokens = "lean", full, full_tokens
    for form, leaner in (("lean", False), ("leaner", True)):
        offered = [lean_schema(s, leaner=leaner) for s in full]
        tokens = cost(offered)
        if tokens <= budget:
            return SizedTools(offered, form, (), tokens, full_tokens)
    names = [s.get("function", s)["name"] for s in offered]
    skipped = [n for n in reversed(names) if n in BUILTIN_TOOLS and not BUILTIN_TOOLS[n].essential]
    # the tools that run code (opted in or out by a setting) go last: they do the work
    order = sorted(skipped, key=lambda n: n in BUILTIN_TOOLS and bool(BUILTIN_TOOLS[n].opt_in))
    left: list[str] = []
    for name in order:
        if tokens <= budget:
            break
        left.append(name)
        offered = [s for s in offered if s.get("function", s)["name"] not in left]
        tokens = cost(offered)
    return SizedTools(offered, form, tuple(left), tokens, full_tokens)  # in the order left out
