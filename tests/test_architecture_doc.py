"""docs/architecture.md names every module: each module under nbagent/ and widgets/ in the
table row of its own folder, each facade (nbagent/*.py) on the facades line. A module
added without its line fails here, so the map cannot silently fall behind the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def rows() -> dict[str, str]:
    """Each table row's folder ("engine/", "agent/models/", "widgets/") → its rows' text."""
    found: dict[str, str] = {}
    for line in DOC.splitlines():
        first = re.match(r"\| `([^`]+)`", line)
        if first:
            where = first.group(1)
            folder = where if where.endswith("/") else where.rpartition("/")[0] + "/"
            found[folder] = found.get(folder, "") + line
    return found


def modules() -> list[tuple[str, str]]:
    """(folder as the doc names it, module name) for every module of the package."""
    found = []
    for base, prefix in ((ROOT / "nbagent", ""), (ROOT / "widgets", "widgets/")):
        for path in sorted(base.rglob("*.py")):
            relative = path.relative_to(base)
            if path.name == "__init__.py" or (prefix == "" and len(relative.parts) == 1):
                continue  # a door, or a facade (checked below)
            folder = prefix + "".join(f"{part}/" for part in relative.parts[:-1])
            found.append((folder, path.stem))
    return found


@pytest.mark.parametrize(("folder", "name"), modules(),
                         ids=[f"{f}{n}" for f, n in modules()])
def test_every_module_is_named_in_its_folders_rows(folder: str, name: str) -> None:
    text = rows().get(folder, "")
    assert re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text), \
        f"docs/architecture.md names no {folder}{name} in a `{folder}` row"


def test_every_facade_is_named_on_the_facades_line() -> None:
    facades = DOC[DOC.index("nbagent/*.py"):DOC.index("```", DOC.index("nbagent/*.py"))]
    for path in sorted((ROOT / "nbagent").glob("*.py")):
        if path.name != "__init__.py":
            assert re.search(rf"\b{path.stem}\b", facades), f"facade {path.stem} unnamed"


MAX_ROW = 160  # a line a reader scans; the detail is the module's docstring


def test_every_row_is_one_short_line() -> None:
    """The rooms table is a map, one short line per module: a row that grows past a line
    is detail that belongs in the module's docstring, where it is read beside the code."""
    long = [line[:60] + "…" for line in DOC.splitlines()
            if line.startswith("| `") and len(line) > MAX_ROW]
    assert long == [], f"rows past {MAX_ROW} characters: {long}"
