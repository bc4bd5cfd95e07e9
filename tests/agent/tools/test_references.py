"""jupyter-ai's cell references in a chat message (`nbagent.agent.tools._references`):
`{name}` becomes the variable's value, `{In[n]}`/`{Out[n]}`/`{Err[n]}` are replaced in
place, bare `In[n]`/`Out[n]`/`Err[n]` attach the cell below the message, each bounded; text
without references, code spans and fences stay as they are."""

from __future__ import annotations

from nbagent.agent.tools import REFERENCE_CHARS, expand_cell_references
from tests.agent.tools.helpers import sales


def test_names_in_braces_become_their_values() -> None:
    namespace = {"city": "Oslo", "n": 3, "df": sales()}
    text = "Sales in {city} for the top {n}: {missing} {{city}} `{city}` ```\n{n}\n```"
    assert expand_cell_references(text, namespace) == (
        "Sales in Oslo for the top 3: {missing} {{city}} `{city}` ```\n{n}\n```")
    assert "visitors" in expand_cell_references("look at {df}", namespace)


def test_a_long_value_is_cut_with_a_marker() -> None:
    text = expand_cell_references("{big}", {"big": "y" * 50_000})
    assert text.startswith("y" * REFERENCE_CHARS + "… [cut] (50,000 chars in all)")


def test_cell_references_in_braces_are_replaced_in_place() -> None:
    In = ["", "df = load()", "df.plot()"]
    Out = {2: "<Axes>"}
    errors = {1: "NameError: name 'load' is not defined"}
    text = "I ran {In[1]} and got {Err[1]}; then {Out[2]}. {Out[9]} stays."
    assert expand_cell_references(text, {}, In=In, Out=Out, errors=errors) == (
        "I ran df = load() and got NameError: name 'load' is not defined; then <Axes>. "
        "{Out[9]} stays.")


def test_bare_cell_references_attach_the_cell_below_the_message() -> None:
    In = ["", "x = {a}", "x + 1"]
    errors = {2: "TypeError: can only concatenate str (not \"int\") to str"}
    text = expand_cell_references("explain Err[2], given In[1]. And Out[5]? Err[2] again",
                                  {"a": 1}, In=In, Out={}, errors=errors)
    message, *attached = text.split("\n\n")
    assert message == "explain Err[2], given In[1]. And Out[5]? Err[2] again"
    assert attached == [
        'Err[2] (the error of cell 2):\n```\nTypeError: can only concatenate str (not "int") to '
        "str\n```",
        "In[1] (the input of cell 1):\n```\nx = {a}\n```",  # inserted text is not expanded
        "Out[5]: no output recorded for cell 5.",
    ]


def test_text_without_references_is_unchanged() -> None:
    text = "Plot {'a': 1} with f\"{x!r}\" and dict(In=[1]) — Inn[2] is no reference"
    assert expand_cell_references(text, {"x": 1}) == text
