"""The floor written as text stays within its budget: over it, the oldest middle user
messages shorten first, the first and the latest stay whole, and none goes silently."""

from __future__ import annotations

from nbagent.compaction import (
    Floor,
)
from nbagent.engine import SHORTENED
from nbagent.engine.compaction._floor_render import render_floor
from nbagent.testing import parse_floor
from tests.helpers import tokens


def test_the_floor_stays_within_its_budget() -> None:
    users = tuple(f"Question {i}: how does col_{i} relate to the target? More words here."
                  for i in range(200))
    floor = Floor(users, tuple(f"name_{i}" for i in range(300)), tuple(f"E{i}Error: x" for i in
                                                                       range(50)))
    for budget in (200, 800, 3_000):
        text = render_floor(floor, budget, keep_first=True, keep_last=True)
        assert tokens([{"role": "user", "content": text}]) <= budget * 1.1 + 40


def test_over_budget_the_oldest_middle_messages_shorten_and_none_goes_silently() -> None:
    asks = [f"Ask number {i}: please look at the weekly numbers again. Then tell me more."
            for i in range(40)]
    asks[5] = "Looks fine. From now on drop the rows from the old pilot, they do not compare."
    floor = Floor(tuple(asks), (), ())
    kept = parse_floor(render_floor(floor, 500, keep_first=True, keep_last=True)).user_messages
    assert kept[0] == asks[0] and kept[-1] == asks[-1]  # the first and the latest stay whole
    assert any(k.endswith(SHORTENED) for k in kept)  # the oldest middle ones were shortened
    assert any("drop the rows from the old pilot" in k for k in kept)  # the decision outlives
    left_out = [k for k in kept if k.startswith("[") and "left out" in k]
    said = int(left_out[0].split()[0][1:]) if left_out else 0
    shown = sum(any(k.startswith(a[:16]) for k in kept) for a in asks)
    assert shown + said == len(asks)  # every message is shown or counted as left out
