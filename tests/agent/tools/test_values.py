"""One value as short bounded text (`nbagent.agent.tools._values`): `describe_value`'s
longer look at a table (dtypes, head, statistics), a value whose repr raises or runs long,
and long strings redacted before they are cut."""

from __future__ import annotations

from nbagent.agent.tools import describe_value, notebook_state
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
