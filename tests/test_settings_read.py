"""Every setting is read somewhere: a field of `EngineSettings` or `Settings` that no module
outside the two settings modules reads is a knob that turns nothing, and its behaviour test
(if anyone wrote one) is the only other thing that would notice. Read means, in the source
of nbagent/ or widgets/, an attribute access `.name` or `getattr(..., "name")`.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from nbagent import Settings
from nbagent.engine import EngineSettings

ROOT = Path(__file__).parents[1]
SETTINGS_MODULES = {ROOT / "nbagent" / "engine" / "_settings.py",
                    ROOT / "nbagent" / "agent" / "_settings.py"}


def names_read(source: str) -> set[str]:
    """The names `source` reads as attributes: `x.name`, and `getattr(x, "name"...)`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "getattr" and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            names.add(node.args[1].value)
    return names


@cache
def readers() -> dict[str, frozenset[str]]:
    """Each name read as an attribute → the modules (relative paths) that read it."""
    found: dict[str, set[str]] = {}
    for folder in ("nbagent", "widgets"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path in SETTINGS_MODULES:
                continue
            for name in names_read(path.read_text(encoding="utf-8")):
                found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return {name: frozenset(paths) for name, paths in found.items()}


FIELDS = sorted(set(EngineSettings.model_fields) | set(Settings.model_fields))


def test_the_reader_finds_attributes_and_getattr_names_only() -> None:
    source = 'settings.alpha\ngetattr(settings, "beta", None)\nx = "gamma"\ny = {"delta": 1}\n'
    assert names_read(source) == {"alpha", "beta"}


@pytest.mark.parametrize("name", FIELDS)
def test_every_setting_is_read_outside_the_settings_modules(name: str) -> None:
    assert readers().get(name), (
        f"the setting {name!r} is read by no module of nbagent/ or widgets/ besides the "
        f"settings modules (no `.{name}`, no getattr(..., {name!r})): read it where it acts, "
        "or remove the field and its row in docs/configuration.md")
