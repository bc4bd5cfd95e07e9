"""The notebook listing (`nbagent.agent.tools._namespace`), as pure functions over a
namespace: only the user's variables, tables first then by name, bounded by its token
budget (fewer columns before fewer lines), deterministic, and never running anything
expensive or fragile on objects it does not know. Cell references are in test_references,
one value's longer look in test_values, hidden names in test_secret_names."""

from __future__ import annotations

import math
import types
from typing import Any

import numpy as np
import pandas as pd
import pytest

from nbagent import estimate_tokens
from nbagent.agent.tools import (
    STATE_TITLE,
    notebook_state,
    variable_lines,
)
from tests.agent.tools.helpers import TEXT, sales


class Lazy:
    """A lazy collection: asking its size would run the whole computation."""

    def __init__(self) -> None:
        self.computed: list[str] = []

    def __len__(self) -> int:
        self.computed.append("len")
        return 10**9

    def __iter__(self) -> Any:
        self.computed.append("iter")
        return iter(())

    def __getattr__(self, name: str) -> Any:
        self.computed.append(name)
        raise AttributeError(name)


class BrokenShape:
    @property
    def shape(self) -> tuple[int, int]:
        raise RuntimeError("the backing file is gone")


class FrameWithBrokenShape(pd.DataFrame):
    @property
    def shape(self) -> tuple[int, int]:  # type: ignore[override]
        raise RuntimeError("the backing file is gone")


def _estimator_base() -> type:
    """A class that stands where scikit-learn's BaseEstimator stands (same module/name)."""
    base = type("BaseEstimator", (), {})
    base.__module__ = "sklearn.base"
    model = type("LinearRegression", (base,), {})
    model.__module__ = "sklearn.linear_model._base"
    return model


def test_the_state_names_tables_arrays_models_and_values() -> None:
    namespace: dict[str, Any] = {
        "df": sales(),
        "weights": np.zeros((3, 4), dtype="float32"),
        "model": _estimator_base()(),
        "threshold": 0.5,
        "path": "data/sales.csv",
        "notes": {"owner": "ana", "rows": 2},
        "items": [1, 2, 3],
    }
    state = notebook_state(namespace)
    assert state == "\n".join([
        STATE_TITLE,
        f"df: DataFrame shape (2, 4); columns: city ({TEXT}), month (int64), sales (float64), "
        "visitors (int64)",
        "weights: ndarray (numpy) shape (3, 4) dtype float32",
        "model: LinearRegression model (sklearn)",
        "items: list (3 items)",
        "notes: dict (2 keys: owner, rows)",
        "path: str = 'data/sales.csv'",
        "threshold: float = 0.5",
    ])


def test_only_the_users_variables_are_listed() -> None:
    namespace: dict[str, Any] = {
        "np": np, "pd": pd, "math": math, "sin": math.sin, "helper": lambda x: x,
        "Frame": pd.DataFrame, "_": 42, "_hidden": 1, "__builtins__": {}, "In": [""],
        "Out": {}, "exit": object(), "quit": object(), "get_ipython": object(),
        "mod": types.ModuleType("mod"), "n": 3,
    }
    assert variable_lines(namespace) == ["n: int = 3"]
    assert notebook_state({}) is None
    assert notebook_state({"np": np, "_x": 1}) is None


def test_unknown_objects_are_named_by_type_and_never_asked_anything() -> None:
    lazy = Lazy()
    namespace = {"lazy": lazy, "broken": BrokenShape(), "frame": FrameWithBrokenShape(sales()),
                 "n": 1}
    lines = variable_lines(namespace)
    assert lazy.computed == []  # no len(), no iteration, no attribute read
    assert lines == [
        f"frame: FrameWithBrokenShape; columns: city ({TEXT}), month (int64), sales (float64), "
        "visitors (int64)",
        "n: int = 1",
        "broken: BrokenShape (tests)",
        "lazy: Lazy (tests)",
    ]


def test_the_order_is_the_same_whatever_order_the_variables_were_made_in() -> None:
    first = {"b": 1, "a": sales(), "c": "x", "arr": np.ones(2)}
    second = dict(reversed(list(first.items())))
    assert notebook_state(first) == notebook_state(second)
    assert [line.split(":")[0] for line in variable_lines(first)] == ["a", "arr", "b", "c"]


def test_wide_tables_show_their_first_columns_and_how_many_more() -> None:
    wide = pd.DataFrame({f"feature_{i}": [i] for i in range(500)})
    (line,) = variable_lines({"wide": wide})
    assert line.startswith("wide: DataFrame shape (1, 500); columns: feature_0 (int64), ")
    assert line.endswith("feature_29 (int64), +470 more")


@pytest.mark.parametrize("budget", [60, 200, 600, 2_000])
def test_the_block_stays_inside_its_token_budget(budget: int) -> None:
    namespace: dict[str, Any] = {
        f"table_{i:03d}": pd.DataFrame({f"column_{j}": [j] for j in range(40)}) for i in range(30)
    }
    namespace.update({f"value_{i:03d}": i for i in range(200)})
    state = notebook_state(namespace, max_tokens=budget)
    assert state is not None and estimate_tokens(state) <= budget
    last = state.splitlines()[-1]
    assert last.startswith("… +") and last.endswith("more variables (list_variables shows them all)")
    assert "table_000: DataFrame shape (1, 40)" in state  # tables come first


def test_a_tight_budget_shows_fewer_columns_before_dropping_variables() -> None:
    namespace = {f"t{i}": pd.DataFrame({f"c{j}": [j] for j in range(50)}) for i in range(3)}
    roomy = notebook_state(namespace, max_tokens=5_000)
    tight = notebook_state(namespace, max_tokens=150)
    assert roomy is not None and "+20 more" in roomy
    assert tight is not None and tight.count("DataFrame") == 3 and "more variables" not in tight
