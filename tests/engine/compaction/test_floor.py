"""The floor: read back from the text it was written as (multi-line, unicode), its budget a
bounded share of the trigger, the names notes show counted as the floor finds them, and
the bounded digest of a tool result a snip placeholder carries."""

from __future__ import annotations

import pytest

from nbagent.compaction import (
    Floor,
    floor_budget,
    snip_old_tools,
)
from nbagent.engine import (
    is_snipped,
)
from nbagent.engine.compaction._floor import digest, names_shown
from nbagent.engine.compaction._floor_render import render_floor
from nbagent.testing import parse_floor
from tests.engine.compaction.sessions import (
    FRAME,
    data_session,
)


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


def test_a_snip_placeholder_carries_a_bounded_digest() -> None:
    snipped = snip_old_tools(data_session(), keep_recent_turns=3, min_chars=50)
    placeholders = [m["content"] for m in snipped if m["role"] == "tool" and is_snipped(m["content"])]
    assert "account_ref" in placeholders[0] and "plan_tier" in placeholders[0]
    assert "KeyError: 'dosage_mg'" in placeholders[1]
    big = FRAME + "\n" + "\n".join(f"col_{i}  " * 40 for i in range(200))
    assert len(digest(big, 400)) <= 400
