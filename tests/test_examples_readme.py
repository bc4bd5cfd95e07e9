"""examples/README.md lists every example notebook with the generator that makes it and the
test that executes it, and each generator writes exactly the notebooks saved beside it (so
"edit the generator rather than the JSON" holds)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).parents[1] / "examples"
ROW = re.compile(r"^\| `(?P<notebook>[\w.]+\.ipynb)` \|[^|]*\| `(?P<maker>make_\w+\.py)` \| "
                 r"`(?P<test>tests/[\w/]+\.py)` \|$", re.MULTILINE)


def rows() -> dict[str, tuple[str, str]]:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    return {m["notebook"]: (m["maker"], m["test"]) for m in ROW.finditer(readme)}


def generator(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), EXAMPLES / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_lists_every_notebook_and_every_generator() -> None:
    listed = rows()
    assert sorted(listed) == sorted(p.name for p in EXAMPLES.glob("*.ipynb"))
    makers = {maker for maker, _ in listed.values()}
    assert makers == {p.name for p in EXAMPLES.glob("make_*.py")}
    for notebook, (_, test) in listed.items():
        path = EXAMPLES.parent / test
        assert path.exists() and notebook in path.read_text(encoding="utf-8"), test


@pytest.mark.parametrize("maker", sorted(p.name for p in EXAMPLES.glob("make_*.py")))
def test_each_generator_writes_the_notebooks_the_readme_says(maker: str, tmp_path: Path) -> None:
    import nbformat  # here, not at collection: its schema validator takes seconds to import
    module = generator(maker)
    module.main(tmp_path)
    written = sorted(p.name for p in tmp_path.glob("*.ipynb"))
    assert written == sorted(n for n, (m, _) in rows().items() if m == maker)
    for name in written:
        made = nbformat.read(tmp_path / name, as_version=4)
        saved = nbformat.read(EXAMPLES / name, as_version=4)
        assert [(c.id, c.cell_type, c.source) for c in made.cells] == [
            (c.id, c.cell_type, c.source) for c in saved.cells], f"{name} differs from {maker}'s"
