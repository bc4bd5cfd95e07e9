"""Tests on the public surface: at most a fifth of the test files reach into a private
module (one whose dotted path has a component starting with `_`), counted two ways — by
import, and by import or dotted name (a string such as `monkeypatch.setattr("nbagent.
agent._x.y", ...)` or code that climbs `nbagent.agent._x`). A test that uses only what a
door offers does not break when a module behind it is renamed or split.

Why a share and not zero: some tests legitimately need an internal — the seams test reads
the modules themselves, a process-wide cache must be forgotten between tests, a unit of
machinery (the MCP loop thread) has no public behaviour of its own to test it through.
They stay and count. Why not widen the doors instead: a door exports what a reader of the
room (or a sibling room) uses, not everything a test touches; a name moved into `__all__`
only to leave this count is still an internal.

Why a docstring does not count: a test module's docstring that names the module it covers
(`nbagent.agent.tools._files`) is a pointer for the reader; nothing imports it, and
renaming the module breaks no test. Every other string does count, whatever it is for.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
MAX_SHARE = 0.20
TEST_FILES = sorted((ROOT / "tests").rglob("test_*.py"))
DOTTED = re.compile(r"\bnbagent(?:\.\w+)+")


def our_modules() -> set[str]:
    """Every module's dotted name; the notebook room's folder ships as `nbagent.widgets`."""
    found = set()
    rooms = ((ROOT / "nbagent", ("nbagent",)), (ROOT / "widgets", ("nbagent", "widgets")))
    for folder, prefix in rooms:
        for path in folder.rglob("*.py"):
            parts = [*prefix, *path.relative_to(folder).with_suffix("").parts]
            found.add(".".join(p for p in parts if p != "__init__"))
    return found


MODULES = our_modules()


def private_module(dotted: str, modules: set[str]) -> str | None:
    """The private module of ours that `dotted` names or reaches through, or None."""
    parts = dotted.split(".")
    for end in range(2, len(parts) + 1):
        module = ".".join(parts[:end])
        if module in modules and any(p.startswith("_") for p in parts[1:end]):
            return module
    return None


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and its functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant):
            found.add(id(node.body[0].value))
    return found


def dotted_name(node: ast.Attribute) -> str:
    """`a.b.c` for an attribute chain that starts at a plain name, else ""."""
    names: list[str] = []
    value: ast.expr = node
    while isinstance(value, ast.Attribute):
        names.append(value.attr)
        value = value.value
    return ".".join([value.id, *reversed(names)]) if isinstance(value, ast.Name) else ""


def reaches(source: str, modules: set[str] = MODULES) -> tuple[set[str], set[str]]:
    """The private modules `source` imports (`import a._b`, `from a._b import x`,
    `from a import _b`), and those it names by a dotted string or attribute chain."""
    tree = ast.parse(source)
    skipped = docstrings(tree)
    imported: set[str] = set()
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {m for a in node.names if (m := private_module(a.name, modules))}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported |= {m for a in node.names
                         if (m := private_module(f"{node.module}.{a.name}", modules))}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in skipped:
            named |= {m for d in DOTTED.findall(node.value) if (m := private_module(d, modules))}
        elif isinstance(node, ast.Attribute):
            named |= {m for m in [private_module(dotted_name(node), modules)] if m}
    return imported, named


MADE_UP = {"nbagent", "nbagent.agent", "nbagent.agent._spool", "nbagent.agent.spool"}


@pytest.mark.parametrize(("source", "found"), [
    ("from nbagent.agent._spool import wind", ({"nbagent.agent._spool"}, set())),
    ("from nbagent.agent import _spool", ({"nbagent.agent._spool"}, set())),
    ("import nbagent.agent._spool as spool", ({"nbagent.agent._spool"}, set())),
    ("patch('nbagent.agent._spool.wind', None)", (set(), {"nbagent.agent._spool"})),
    ("import nbagent\nnbagent.agent._spool.reel = None", (set(), {"nbagent.agent._spool"})),
    ('"""Winding (`nbagent.agent._spool`)."""\ndef f():\n    """`nbagent.agent._spool`"""',
     (set(), set())),
    ("from nbagent.agent import spool, _wind\nfrom nbagent.agent.spool import _reel",
     (set(), set())),  # a private name of a public module is not a private module
], ids=["from module", "from door", "import as", "string", "attribute chain", "docstrings",
        "public"])
def test_each_way_of_reaching_in_is_seen(source: str, found: tuple[set[str], set[str]]) -> None:
    assert reaches(source, MADE_UP) == found


def test_at_most_a_fifth_of_the_test_files_reach_into_private_modules() -> None:
    reach = {path.relative_to(ROOT).as_posix(): reaches(path.read_text(encoding="utf-8"))
             for path in TEST_FILES}
    by_import = sorted(p for p, (imported, _) in reach.items() if imported)
    by_either = sorted(p for p, (imported, named) in reach.items() if imported or named)
    for way, files in (("import", by_import), ("import or dotted name", by_either)):
        share = len(files) / len(TEST_FILES)
        assert share <= MAX_SHARE, (
            f"{len(files)} of {len(TEST_FILES)} test files ({share:.1%}) reach into private "
            f"modules by {way}; test through a door or the public behaviour: {files}")
