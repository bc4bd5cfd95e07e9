"""The agent room's doors: `nbagent.agent` and each of its folders re-export their API from
`__init__`, loaded on first use. What a type checker reads (the `TYPE_CHECKING` imports),
what `__all__` lists and what an attribute gives at run time must be one list, and
reaching through a door first thing in a fresh interpreter must work (the folders import
each other's modules, so an eager door would be an import circle)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

DOORS = ["nbagent.agent", "nbagent.agent.archive", "nbagent.agent.mcp", "nbagent.agent.models",
         "nbagent.agent.providers", "nbagent.agent.tools"]


def typed_imports(package: str) -> dict[str, str]:
    """Each name the door's `if TYPE_CHECKING:` block imports → the module it names."""
    path = Path(importlib.import_module(package).__file__ or "")
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imported in node.body:
                assert isinstance(imported, ast.ImportFrom) and imported.level == 1
                found.update({alias.name: f"{package}.{imported.module}"
                              for alias in imported.names})
    return found


@pytest.mark.parametrize("package", DOORS)
def test_a_door_lists_each_name_once_and_gives_the_object_where_it_lives(package: str) -> None:
    door = importlib.import_module(package)
    typed = typed_imports(package)
    assert typed, f"{package} re-exports nothing"
    assert sorted(door.__all__) == sorted(typed)
    assert sorted(door._PARTS) == sorted({f".{m.rpartition('.')[2]}" for m in typed.values()})
    for name, module in typed.items():
        assert getattr(door, name) is getattr(importlib.import_module(module), name), name
    assert set(door.__all__) <= set(dir(door))
    with pytest.raises(AttributeError):
        door.not_a_name  # noqa: B018


@pytest.mark.parametrize("package", DOORS)
def test_a_door_is_the_first_thing_a_fresh_interpreter_can_use(package: str) -> None:
    code = f"from {package} import *; import {package} as door; print(len(door.__all__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(importlib.import_module(package).__all__)


def test_the_mcp_door_brings_in_the_sdk_only_when_a_server_is_asked_for() -> None:
    code = ("import sys; from nbagent.agent.mcp import read_mcp_config; a = 'mcp' in sys.modules;"
            " from nbagent.agent.mcp import McpServers; print(a, 'mcp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
