"""Code blocks of a reply coloured as JupyterLab colours code: Pygments splits the code into
tokens and each coloured token is an escaped span whose colour is the theme's own CodeMirror
variable (light, dark or any theme; plain fallbacks elsewhere). Only our markup carries a
style: the code itself is text, escaped.
"""

from __future__ import annotations

import html
from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    String,
    _TokenType,
)
from pygments.util import ClassNotFound

# Token kind → the JupyterLab theme variable (and its light-theme value as the fallback),
# most specific first, as CodeMirror colours Python in a notebook.
COLOURS: list[tuple[_TokenType, str, str]] = [
    (Comment, "comment", "#408080"),
    (String, "string", "#ba2121"),
    (Number, "number", "#080"),
    (Operator.Word, "keyword", "green"),
    (Keyword, "keyword", "green"),
    (Name.Builtin, "builtin", "green"),
    (Name.Function, "def", "#00f"),
    (Name.Class, "def", "#00f"),
    (Name.Decorator, "meta", "#a2f"),
    (Operator, "operator", "#7800c2"),
]
PROPERTY = ("property", "#05a")  # a name after a dot


@lru_cache(maxsize=32)
def _lexer(language: str) -> Lexer | None:
    if not language:
        return None
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


# A streaming reply is rendered again at every redraw, but only its last code block grows:
# the finished blocks come from here (lexing is most of a render's cost).
@lru_cache(maxsize=64)
def highlight(code: str, language: str) -> str:
    """`code` as escaped HTML with coloured spans, or only escaped for an unknown language."""
    lexer = _lexer(language)
    if lexer is None:
        return html.escape(code, quote=False)
    runs: list[tuple[tuple[str, str] | None, str]] = []  # adjacent tokens of one colour join
    after_dot = False
    for kind, text in lexer.get_tokens(code):
        colour = _colour(kind, text, after_dot)
        if runs and (runs[-1][0] == colour or not text.strip()):
            runs[-1] = (runs[-1][0], runs[-1][1] + text)
        else:
            runs.append((colour, text))
        if text.strip():
            after_dot = text == "."
    return "".join(_span(colour, text) for colour, text in runs)


def _span(colour: tuple[str, str] | None, text: str) -> str:
    escaped = html.escape(text, quote=False)
    if colour is None:
        return escaped
    name, fallback = colour
    return f'<span style="color:var(--jp-mirror-editor-{name}-color,{fallback})">{escaped}</span>'


def _colour(kind: _TokenType, text: str, after_dot: bool) -> tuple[str, str] | None:
    if kind is Operator and text == ".":
        return None  # CodeMirror leaves the dot of an attribute plain
    if kind is Name and after_dot:
        return PROPERTY
    for parent, name, fallback in COLOURS:
        if kind in parent:
            return name, fallback
    return None
