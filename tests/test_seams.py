"""The rooms and one-way doors of DESIGN.md, checked on the source (every import,
relative, absolute, lazy inside a function or only for type checking) and on a fresh
interpreter.

    engine    history, tokens, window, thresholds, compaction levels, controller
      ↑
    agent     the model seam (litellm), tools, the loop, the session, the archive
      ↑
    notebook  magics and widgets — on nbagent's public API only
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "nbagent"
# a module's room is the folder it lives in; modules at the root are public facades
ROOMS = {"engine": PACKAGE / "engine", "agent": PACKAGE / "agent", "notebook": ROOT / "widgets"}
FORBIDDEN_IN_ENGINE = {"litellm", "IPython", "ipywidgets", "tiktoken", "anywidget"}
LLM_MODULES = {"nbagent.agent.models._litellm"}  # the one door to litellm


def module_files() -> Iterator[tuple[str, Path, str]]:
    """Every module with its dotted name and its room (from its path)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, room_of(path)
    for path in sorted(ROOMS["notebook"].rglob("*.py")):
        stem = path.relative_to(ROOMS["notebook"]).with_suffix("").parts
        yield ".".join(("nbagent.widgets", *[p for p in stem if p != "__init__"])), path, "notebook"


def room_of(path: Path) -> str:
    for name, folder in ROOMS.items():
        if folder in path.parents:
            return name
    return "top"


def imports_of(name: str, path: Path) -> set[str]:
    """Every module `name` imports, anywhere in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if node.module or not node.level:  # `from . import x` imports x, not the package
                found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


FILES = list(module_files())
GRAPH = {name: imports_of(name, path) for name, path, _ in FILES}
ROOM = {name: where for name, _, where in FILES}


def room(module: str) -> str:
    return ROOM[module]


def ours(imported: set[str]) -> set[str]:
    """The nbagent modules among `imported` (a `from x import name` may name a module)."""
    return {m for m in imported if m in GRAPH}


RANK = {"engine": 0, "agent": 1, "notebook": 2, "top": 3}


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_no_door_runs_upward(name: str) -> None:
    """A room imports only rooms below it; the notebook room may use the public facades."""
    allowed_up = {"top"} if room(name) == "notebook" else set()
    upward = sorted(m for m in ours(GRAPH[name])
                    if RANK[room(m)] > RANK[room(name)] and room(m) not in allowed_up)
    assert upward == [], f"{name} ({room(name)}) imports {upward}"


def test_every_module_has_a_room_from_its_path() -> None:
    """No hand-kept list: a new file's folder decides its room, and the root holds only
    facades (the package root, events, compaction, testing, local, demo)."""
    assert {room(name) for name in GRAPH} == {"engine", "agent", "notebook", "top"}
    facades = sorted(name for name in GRAPH if room(name) == "top")
    assert all(name.count(".") <= 1 and not name.split(".")[-1].startswith("_")
               for name in facades), facades


@pytest.mark.parametrize("name", sorted(m for m in GRAPH
                                        if room(m) == "top" and m != "nbagent"))
def test_a_root_module_only_re_exports(name: str) -> None:
    """A facade holds no logic: imports, `__all__`, docstrings, and at most a `__main__` guard."""
    path = next(p for n, p, _ in FILES if n == name)
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        ok = isinstance(node, (ast.ImportFrom, ast.Import)) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) or (
            isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets]
            == ["__all__"]) or (isinstance(node, ast.If) and "__main__" in ast.unparse(node.test))
        assert ok, f"{name} line {node.lineno} is not a re-export"


@pytest.mark.parametrize("name", sorted(m for m in GRAPH if room(m) == "notebook"))
def test_the_notebook_layer_uses_the_public_api_only(name: str) -> None:
    private = sorted(m for m in ours(GRAPH[name])
                     if room(m) != "notebook" and any(p.startswith("_") for p in m.split(".")))
    assert private == [], f"{name} imports private {private}"


def test_there_is_no_import_circle() -> None:
    edges = {name: ours(imports) - {name} for name, imports in GRAPH.items()}
    # a package's own __init__ re-exporting its submodules is not a circle
    for name in edges:
        edges[name] = {m for m in edges[name] if not m.startswith(name + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import circle: " + " → ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)


def names_imported(name: str, path: Path) -> Iterator[tuple[str, str, int]]:
    """Each (module, name, line) that `name` imports a name from: `from m import x` gives
    (m, x); `import m.n` gives (m, n) for each package on the way, so a door is seen."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] \
                if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            for alias in node.names:
                yield module, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                for n in range(1, len(parts) + 1):
                    yield ".".join(parts[: n - 1]), parts[n - 1], node.lineno


PACKAGES = {name for name, path, _ in FILES if path.name == "__init__.py"}
# The notebook room's source folder is its own room, shipped as `nbagent.widgets`: the root
# `nbagent` above it is the public API it must use, not its door.
NOT_A_DOOR = {"notebook": {"nbagent"}}


@pytest.mark.parametrize("name", sorted(n for n, p, _ in FILES if p.name != "__init__.py"))
def test_a_module_imports_its_siblings_never_its_own_door(name: str) -> None:
    """A door (a package's `__init__`) re-exports its modules; a module inside that package
    that imports a name through the door instead of from the module defining it hides the
    real dependency and makes a circle through `__init__` (dodged by importing it lazily
    inside a function, where a reader does not look)."""
    path = next(p for n, p, _ in FILES if n == name)
    through = sorted(f"line {line}: {module}.{imported}"
                     for module, imported, line in names_imported(name, path)
                     if module in PACKAGES and name.startswith(module + ".")
                     and module not in NOT_A_DOOR.get(room(name), set())
                     and f"{module}.{imported}" not in GRAPH)
    assert through == [], f"{name} imports through its own door: {through}"


def private_names_used(name: str, path: Path) -> Iterator[str]:
    """Each `_private` name of another nbagent module that `name` imports or reads as an
    attribute of a module it imported (a private module itself may be imported)."""
    modules: dict[str, str] = {}  # local name -> our module it is bound to
    for module, imported, line in names_imported(name, path):
        full = f"{module}.{imported}" if module else imported
        if full in GRAPH:
            modules[imported] = full
        elif module in GRAPH and module != name and imported.startswith("_") \
                and not imported.startswith("__"):
            yield f"line {line}: {module}.{imported}"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.ImportFrom):
            modules.update({a.asname: modules.get(a.name, "") for a in node.names
                            if a.asname and a.name in modules})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in modules and node.attr.startswith("_") and \
                not node.attr.startswith("__") and \
                f"{modules[node.value.id]}.{node.attr}" not in GRAPH:
            yield f"line {node.lineno}: {modules[node.value.id]}.{node.attr}"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_no_module_uses_another_modules_private_name(name: str) -> None:
    """A `_name` is its module's own: a helper two modules need moves to where both may
    import it under a public name, so changing a private one never breaks another module."""
    path = next(p for n, p, _ in FILES if n == name)
    used = sorted(private_names_used(name, path))
    assert used == [], f"{name} uses another module's private names: {used}"


@pytest.mark.parametrize("name", sorted(m for m in GRAPH if room(m) == "engine"))
def test_the_engine_imports_no_model_or_notebook_library(name: str) -> None:
    roots = {m.split(".")[0] for m in GRAPH[name]}
    assert not roots & FORBIDDEN_IN_ENGINE


def test_litellm_is_imported_only_by_the_model_seam() -> None:
    importers = sorted(n for n, imports in GRAPH.items()
                       if any(m.split(".")[0] == "litellm" for m in imports))
    assert importers == sorted(LLM_MODULES)


# What is loaded only where it is used (issue 44): what talks to a network (httpx, ssl,
# asyncio's loops, the SDKs), parses Markdown, builds a CLI (httpx's own pulls in click and
# pygments), reads a config file format, or is a model or notebook library. Named rather
# than counted, so a new Python or library version does not break the pin.
LOADED_WHEN_USED = ("httpx", "httpx_sse", "ssl", "asyncio", "anyio", "click", "pygments",
                    "markdown_it", "nh3", "json5", "mcp", "litellm", "openai", "tiktoken",
                    "llama_cpp", "IPython", "ipywidgets", "anywidget", "jinja2")


def loaded_by(code: str) -> set[str]:
    """The modules a fresh interpreter has after running `code`."""
    code += "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_importing_nbagent_loads_its_door_and_nothing_behind_it() -> None:
    """`import nbagent` alone loads the root's lazy door; each name loads on first use."""
    loaded = loaded_by("import nbagent")
    assert sorted(m for m in loaded if m.startswith("nbagent")) == [
        "nbagent", "nbagent.agent", "nbagent.agent._doors"]
    assert not {m.partition(".")[0] for m in loaded} & {*LOADED_WHEN_USED, "pydantic"}


def test_every_exported_name_and_a_new_agent_load_nothing_used_later() -> None:
    loaded = loaded_by("from nbagent import *\nfrom nbagent.testing import ScriptedModel\n"
                       "Agent(model=ScriptedModel(['hi']), namespace={}, archive=False)")
    assert "nbagent.agent._agent" in loaded
    assert sorted({m.partition(".")[0] for m in loaded} & set(LOADED_WHEN_USED)) == []


def test_no_module_is_over_350_lines() -> None:
    """One concept per module: a file past 350 lines is two concepts waiting to be split."""
    long = sorted(f"{name} ({n})" for name, path, _ in FILES
                  if (n := len(path.read_text(encoding="utf-8").splitlines())) > 350)
    assert long == []
