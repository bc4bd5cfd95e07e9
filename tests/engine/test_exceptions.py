"""The errors module is the one tree: every exception nbagent raises on purpose is an
`NbagentError` defined there and drawn in its docstring, and no module defines another
error a caller could meet (only module-local signals that never leave their module)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import nbagent
from nbagent.engine import _exceptions

PACKAGE = Path(nbagent.__file__).parent
# Raised and caught inside one module (or a test fake's stand-in for a provider's error):
# signals, not errors a caller meets. A new name here needs a reason.
SIGNALS = {"NoOneToAsk", "Unreachable", "_Rendered", "_ShowFailed", "_Torn", "ProviderError",
           "HandOver", "SignInRefused", "Interrupted"}

TREE = [value for value in vars(_exceptions).values()
        if inspect.isclass(value) and value.__module__ == _exceptions.__name__]

NAMES = {kind.__name__ for kind in TREE}


@pytest.mark.parametrize("kind", TREE, ids=lambda kind: kind.__name__)
def test_every_exception_is_in_the_tree_and_drawn(kind: type) -> None:
    assert issubclass(kind, _exceptions.NbagentError | _exceptions.NbagentWarning)
    drawn = [line for line in (_exceptions.__doc__ or "").splitlines()
             if f"── {kind.__name__}" in line or line.strip().startswith(kind.__name__)]
    assert drawn, f"{kind.__name__} is not drawn in the tree of engine/_exceptions.py"


def test_the_mcp_and_file_errors_joined_the_tree() -> None:
    from nbagent.agent.tools import open_confined
    from nbagent.mcp import McpConfigError, McpToolError

    assert issubclass(McpConfigError, nbagent.NbagentError)
    assert issubclass(McpConfigError, ValueError)  # callers that catch ValueError still do
    assert issubclass(McpToolError, nbagent.NbagentError)
    with pytest.raises(nbagent.NbagentError, match="No file"):
        open_confined(PACKAGE / "no-such-file.txt", "no-such-file.txt")


def test_no_module_defines_an_error_outside_the_tree() -> None:
    outside = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_exceptions.py" and path.parent.name == "engine":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name not in SIGNALS and any(
                    isinstance(base, ast.Name) and base.id.endswith(("Exception", "Error"))
                    and base.id not in NAMES  # a finer kind of a tree error is in the tree
                    for base in node.bases):
                outside.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert outside == []
