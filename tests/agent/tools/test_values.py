"""One value as short bounded text (`nbagent.agent.tools._values`): `describe_value`'s
longer look at a table (dtypes, head, statistics), a value whose repr raises or runs long,
and long strings redacted before they are cut."""

from __future__ import annotations

import pytest

from nbagent.agent.tools import (
    BUILTIN_TOOLS,
    RANK,
    VALUE_KINDS,
    ValueKind,
    describe_value,
    entry_of,
    notebook_state,
)
from tests.agent.tools.helpers import sales


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


JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
       "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


def test_long_strings_are_redacted_before_they_are_cut() -> None:
    state = notebook_state({"header": "jwt " + JWT, "dsn_note": "x"})
    assert state is not None
    line = next(line for line in state.splitlines() if line.startswith("header"))
    assert line == f"header: str ({len(JWT) + 4:,} chars) = 'jwt [redacted]'"
    assert JWT[:12] not in state
    described = describe_value("header", "jwt " + JWT)
    assert JWT[:12] not in described and "[redacted]" in described


def _an_xgboost_model() -> object:
    return type("XGBClassifier", (), {"__module__": "xgboost.sklearn"})()


def _value_samples() -> dict[str, object]:
    """One value of each kind the listing tells apart: a kind added to VALUE_KINDS needs
    one here (and entry_of must give it that kind), a kind removed fails too."""
    import numpy as np
    import pandas as pd

    return {"table": pd.DataFrame({"a": [1]}), "series": pd.Series([1.0], name="s"),
            "array": np.zeros(3), "model": _an_xgboost_model(), "value": 3,
            "object": object()}


def test_every_value_kind_has_a_sample() -> None:
    assert set(_value_samples()) == {kind.name for kind in VALUE_KINDS}


@pytest.mark.parametrize("kind", VALUE_KINDS, ids=[kind.name for kind in VALUE_KINDS])
def test_each_value_kind_is_what_the_listing_makes_of_its_sample(kind: ValueKind) -> None:
    entry = entry_of("sample", _value_samples()[kind.name])
    assert entry is not None and entry.rank == RANK[kind.name]
    # what list_variables tells the model (and docs/tools.md shows) says it, in brief
    assert kind.brief in " ".join((BUILTIN_TOOLS["list_variables"].function.__doc__ or "").split())
    # whether a value is sent is said by the row alone (docs/security.md's table prints it)
    assert (" = " in entry.head) == kind.value_shown, entry.head
