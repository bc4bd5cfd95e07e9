"""The floor: read back from the text it was written as (multi-line, unicode), its budget a
bounded share of the trigger, and the names notes show counted as the floor finds them."""

from __future__ import annotations

import pytest

from nbagent.compaction import (
    Floor,
    floor_budget,
)
from nbagent.engine.compaction._floor import names_shown
from nbagent.engine.compaction._floor_render import render_floor
from nbagent.testing import parse_floor


def test_a_floor_reads_back_what_it_wrote_even_multiline_and_unicode() -> None:
    floor = Floor(("Load a.csv\n\n  then plot", "Ünïcode ✓ 数据"), ("a.csv", "Unit Price"),
                  ("KeyError: 'x'",))
    assert parse_floor(render_floor(floor, 1_000)) == floor


def test_floor_budget_is_a_bounded_share_of_the_trigger() -> None:
    assert floor_budget(6_841) == 1_710 and floor_budget(200) == 200
    assert floor_budget(900_000) == 2_000  # a large window needs no larger floor


@pytest.mark.parametrize(("text", "names"), [
    ("Loaded data/sales.csv. Then sales_df.groupby('region') and fitModel2!",
     ("data/sales.csv", "sales_df", "fitModel2")),
    ("plain words, a number 3.5 and 2024 only", ()),
    ("We re-ran the follow-up t-test, e.g. the p-value w/o and/or the x-axis; non-null.", ()),
    ("Checked account A-1001 and run-2-b (a follow-up).", ("A-1001", "run-2-b")),
    ("`df_raw`, (col_1); [x_2] {api.v1}", ("df_raw", "col_1", "x_2", "api.v1")),
])
def test_names_shown_are_the_names_the_floor_finds_in_prose(text: str, names: tuple[str, ...]
                                                            ) -> None:
    assert names_shown(text) == names
