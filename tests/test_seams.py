"""The one-way doors of DESIGN.md, checked on the source and on a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "nbagent"
LLM_MODULE = "_llm.py"
FORBIDDEN = ("litellm", "IPython", "ipywidgets")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


NOTEBOOK = {"_magics.py", "_session.py"}  # the notebook layer: IPython is theirs to use
ENGINE = sorted(p for p in PACKAGE.rglob("*.py") if p.name not in NOTEBOOK | {LLM_MODULE})


@pytest.mark.parametrize("path", ENGINE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engine_and_agent_import_neither_litellm_nor_notebook_libraries(path: Path) -> None:
    assert not imported_modules(path) & set(FORBIDDEN)


@pytest.mark.parametrize("name", sorted(NOTEBOOK))
def test_the_notebook_layer_never_imports_litellm(name: str) -> None:
    assert "litellm" not in imported_modules(PACKAGE / name)


def test_litellm_is_imported_only_by_the_llm_module() -> None:
    importers = [p.name for p in PACKAGE.rglob("*.py") if "litellm" in imported_modules(p)]
    assert importers == [LLM_MODULE]


def test_importing_nbagent_pulls_in_no_heavy_dependency() -> None:
    code = f"import sys, nbagent; print(sorted(m for m in {FORBIDDEN!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
