"""`ToolContext` (`nbagent.agent.tools._context`): what a built-in tool may use. Every
field is described in the class's docstring and has a default, so a new field cannot
arrive unexplained or break a context made from the namespace alone."""

from __future__ import annotations

import dataclasses
import inspect
import re

from nbagent.agent.tools import ToolContext


def test_every_field_has_its_line_in_the_docstring_and_a_default() -> None:
    described = re.findall(r"^ {4}(\w+): ", inspect.getdoc(ToolContext) or "", re.MULTILINE)
    fields = [field.name for field in dataclasses.fields(ToolContext)]
    assert described == fields  # the Args lines, in the fields' order
    context = ToolContext({"n": 3})
    assert context.namespace == {"n": 3}
    missing = dataclasses.MISSING
    assert [f.name for f in dataclasses.fields(ToolContext)
            if f.default is missing and f.default_factory is missing] == ["namespace"]
