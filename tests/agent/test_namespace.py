"""The notebook-state builder and jupyter-ai's cell references, as pure functions over a
namespace: bounded, deterministic, and never running anything expensive or fragile on
objects they do not know."""

from __future__ import annotations

import math
import types
from typing import Any

import numpy as np
import pandas as pd
import pytest

from nbagent import estimate_tokens
from nbagent.agent.tools import (
    REFERENCE_CHARS,
    STATE_TITLE,
    describe_value,
    expand_cell_references,
    notebook_state,
    variable_lines,
)

TEXT = str(pd.Series(["a"]).dtype)  # "object" before pandas 3, "str" since


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


def sales() -> pd.DataFrame:
    return pd.DataFrame({"city": ["Oslo", "Lima"], "month": [1, 2], "sales": [3.5, 4.0],
                         "visitors": [10, 20]})


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


def test_describe_value_of_a_table_has_dtypes_head_and_statistics() -> None:
    text = describe_value("df", sales(), rows=1)
    assert text.startswith("df: DataFrame shape (2, 4)\ndtypes:\n")
    assert "sales       float64" in text and "head(1):" in text and "Oslo" in text
    assert "Lima" not in text.split("describe():")[0] and "mean" in text


def test_describe_value_survives_a_repr_that_raises_and_bounds_a_long_one() -> None:
    class Fragile:
        def __repr__(self) -> str:
            raise ValueError("no repr today")

    assert describe_value("f", Fragile()).endswith(
        "value: unavailable (ValueError: no repr today)")
    long = describe_value("s", "x" * 10_000, max_chars=500)
    assert len(long) < 600 and "… [cut] (" in long


def test_names_in_braces_become_their_values() -> None:
    namespace = {"city": "Oslo", "n": 3, "df": sales()}
    text = "Sales in {city} for the top {n}: {missing} {{city}} `{city}` ```\n{n}\n```"
    assert expand_cell_references(text, namespace) == (
        "Sales in Oslo for the top 3: {missing} {{city}} `{city}` ```\n{n}\n```")
    assert "visitors" in expand_cell_references("look at {df}", namespace)


def test_a_long_value_is_cut_with_a_marker() -> None:
    text = expand_cell_references("{big}", {"big": "y" * 50_000})
    assert text.startswith("y" * REFERENCE_CHARS + "… [cut] (50,000 chars in all)")


def test_cell_references_in_braces_are_replaced_in_place() -> None:
    In = ["", "df = load()", "df.plot()"]
    Out = {2: "<Axes>"}
    errors = {1: "NameError: name 'load' is not defined"}
    text = "I ran {In[1]} and got {Err[1]}; then {Out[2]}. {Out[9]} stays."
    assert expand_cell_references(text, {}, In=In, Out=Out, errors=errors) == (
        "I ran df = load() and got NameError: name 'load' is not defined; then <Axes>. "
        "{Out[9]} stays.")


def test_bare_cell_references_attach_the_cell_below_the_message() -> None:
    In = ["", "x = {a}", "x + 1"]
    errors = {2: "TypeError: can only concatenate str (not \"int\") to str"}
    text = expand_cell_references("explain Err[2], given In[1]. And Out[5]? Err[2] again",
                                  {"a": 1}, In=In, Out={}, errors=errors)
    message, *attached = text.split("\n\n")
    assert message == "explain Err[2], given In[1]. And Out[5]? Err[2] again"
    assert attached == [
        'Err[2] (the error of cell 2):\n```\nTypeError: can only concatenate str (not "int") to '
        "str\n```",
        "In[1] (the input of cell 1):\n```\nx = {a}\n```",  # inserted text is not expanded
        "Out[5]: no output recorded for cell 5.",
    ]


def test_text_without_references_is_unchanged() -> None:
    text = "Plot {'a': 1} with f\"{x!r}\" and dict(In=[1]) — Inn[2] is no reference"
    assert expand_cell_references(text, {"x": 1}) == text


# -- password-like names are hidden; long strings are redacted before they are cut --------------


JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
       "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


@pytest.mark.parametrize("name", ["db_pass", "smtp_pw", "apiKey", "PASSPHRASE", "user_pin",
                                  "DB_PASSWORD", "pwd", "github_token", "client_secret",
                                  "awsSecretAccessKey", "APIKey", "auth", "my_credentials",
                                  "pass2", "ldapPwd", "openai_key"])
def test_password_like_names_hide_their_values(name: str) -> None:
    for value in ("Hunter2-but-longer", b"raw-bytes-value", 482913):
        state = notebook_state({name: value})
        assert state is not None and f"{name}: {type(value).__name__} (hidden" in state
        assert str(value)[2:8] not in state.split("\n", 1)[1]
        described = describe_value(name, value)
        assert "hidden" in described and str(value)[2:8] not in described


@pytest.mark.parametrize("name", ["spin", "keyboard", "monkey", "pinned_rows", "tokenizer",
                                  "passenger_count", "keys_seen_total", "compass", "author"])
def test_names_that_only_contain_a_secret_word_keep_their_values(name: str) -> None:
    assert notebook_state({name: "visible"}) == f"{STATE_TITLE}\n{name}: str = 'visible'"


def test_long_strings_are_redacted_before_they_are_cut() -> None:
    state = notebook_state({"header": "jwt " + JWT, "dsn_note": "x"})
    assert state is not None
    line = next(line for line in state.splitlines() if line.startswith("header"))
    assert line == f"header: str ({len(JWT) + 4:,} chars) = 'jwt [redacted]'"
    assert JWT[:12] not in state
    described = describe_value("header", "jwt " + JWT)
    assert JWT[:12] not in described and "[redacted]" in described
