"""How a figure is written for the user (`engine/_figures.py`, public as `nbagent.text`):
money, percentages, token counts and a tool call on one line, each one way, pinned here;
tests/test_one_place.py finds a copy written by hand anywhere else."""

from __future__ import annotations

import pytest

from nbagent.text import count, money, percent, tokens, tool_call


@pytest.mark.parametrize(("usd", "shown"), [(0.0123, "$0.0123"), (0.0, "$0.0000"),
                                            (0.00004, "$0.0000"), (12.5, "$12.5000")])
def test_money_is_dollars_to_four_places(usd: float, shown: str) -> None:
    assert money(usd) == shown


@pytest.mark.parametrize(("value", "shown"), [(86.4, "86%"), (12.5, "13%"), (13.5, "14%"),
                                              (99.96, "100%"), (-3.0, "0%"), (0.0, "0%")])
def test_a_percentage_is_a_whole_number_rounded_half_up(value: float, shown: str) -> None:
    assert percent(value) == shown  # 12.5 → 13%, where Python's round would say 12


def test_a_token_count_has_thousands_separators() -> None:
    assert (count(1_972), count(7), tokens(1_000_000)) == ("1,972", "7", "1,000,000 tokens")


@pytest.mark.parametrize(("arguments", "shown"), [
    ('{"path": "app.log", "offset": 0}', "read_file(path='app.log', offset=0)"),
    ("{}", "read_file()"),
    ("", "read_file()"),
    ("not json", "read_file(not json)"),
    ('["a"]', 'read_file(["a"])'),
    ('{"path": "' + "x" * 80 + '"}', "read_file(path='" + "x" * 53 + "…)"),
], ids=["keywords", "none", "blank", "not-json", "not-a-mapping", "cut"])
def test_a_tool_call_is_one_line_of_keywords(arguments: str, shown: str) -> None:
    assert tool_call("read_file", arguments) == shown


def test_a_tool_call_is_cut_where_asked() -> None:
    assert tool_call("f", '{"a": "' + "y" * 50 + '"}', 10) == "f(a='yyyyyy…)"  # 10 characters of arguments
