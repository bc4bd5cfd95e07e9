"""The built-in notebook tools, called as the model calls them: over a namespace that
holds real tables and arrays, and objects that are lazy or broken."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from nbagent.agent.tools._builtin import notebook_tools
from nbagent.agent.tools._tool import OutputStore, Tool

TEXT = str(pd.Series(["a"]).dtype)  # "object" before pandas 3, "str" since


class SlowLength:
    """Asking its length would run a five-second query."""

    def __init__(self) -> None:
        self.asked = 0

    def __len__(self) -> int:
        self.asked += 1
        import time

        time.sleep(5)
        return 1


class BrokenShape:
    @property
    def shape(self) -> tuple[int, ...]:
        raise OSError("the memory-mapped file was deleted")


def tools(namespace: dict[str, Any], **options: Any) -> dict[str, Tool]:
    return {t.name: t for t in notebook_tools(namespace, OutputStore(), **options)}


def frame() -> pd.DataFrame:
    return pd.DataFrame({"region": ["n", "s", "n"], "revenue": [1.0, 2.5, None]})


def test_list_variables_shows_columns_and_dtypes() -> None:
    listing = tools({"sales": frame(), "n": 3, "arr": np.arange(6).reshape(2, 3)})["list_variables"]()
    assert listing == (
        f"sales: DataFrame shape (3, 2); columns: region ({TEXT}), revenue (float64)\n"
        "arr: ndarray (numpy) shape (2, 3) dtype int64\n"
        "n: int = 3"
    )


def test_list_variables_is_complete_when_objects_are_lazy_or_broken() -> None:
    slow = SlowLength()
    listing = tools({"slow": slow, "broken": BrokenShape(), "sales": frame()})["list_variables"]()
    assert slow.asked == 0
    assert listing.splitlines() == [
        f"sales: DataFrame shape (3, 2); columns: region ({TEXT}), revenue (float64)",
        "broken: BrokenShape (tests)",
        "slow: SlowLength (tests)",
    ]


def test_list_variables_with_nothing_to_show() -> None:
    assert tools({"np": np})["list_variables"]() == "(no variables)"


def test_describe_variable() -> None:
    found = tools({"sales": frame(), "slow": SlowLength()})
    described = found["describe_variable"](name="sales", rows=2)
    assert "revenue    float64" in described and "head(2):" in described and "mean" in described
    assert found["describe_variable"](name="nope") == (
        "No variable named 'nope'. Use list_variables to see what exists.")
    assert found["describe_variable"](name="slow").startswith("slow: SlowLength (tests)\nvalue:")


def test_describe_variable_bounds_rows_and_size() -> None:
    big = pd.DataFrame({"x": range(1_000), "y": ["text " * 20] * 1_000})
    described = tools({"big": big})["describe_variable"](name="big", rows=500)
    assert "head(50):" in described and len(described) < 4_200


def test_read_file_pages_by_lines_inside_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir(), elsewhere.mkdir()
    (work / "notes.txt").write_text("\n".join(f"line {i}" for i in range(30)))
    (elsewhere / "private.txt").write_text("not for the model")
    monkeypatch.chdir(work)
    read_file = tools({})["read_file"]
    page = read_file(path="notes.txt", offset=10, limit=5)
    assert page.startswith("[lines 10–15 of 30; next offset 15]\nline 10")
    refused = read_file(path=str(elsewhere / "private.txt"))
    assert refused.startswith("Refused:") and "NBAGENT_READ_ROOTS" in refused


def test_recall_reads_the_session_archive(tmp_path: Path) -> None:
    from nbagent.agent.archive._archive import Archive

    with Archive("recall-test", tmp_path) as archive:
        archive.write("message", {"message": {"role": "user", "content": "drop the pilot rows"}},
                      sync=True)
        found = {t.name: t for t in notebook_tools({}, OutputStore(), archive=lambda: archive)}
        assert "#0 user: drop the pilot rows" in found["recall"](query="pilot")


def test_recall_without_an_archive_says_so() -> None:
    assert tools({})["recall"](query="revenue") == "No session archive to recall from."


def test_python_is_offered_only_when_enabled() -> None:
    assert "python" not in tools({})
    namespace: dict[str, Any] = {"x": 2}
    assert tools(namespace, enable_python=True)["python"](code="y = x * 21\nprint(y)") == "42\n"
    assert namespace["y"] == 42
