"""Every level alike: given token counts give the same result as estimating, pins stay
verbatim, and the levels (and the controller) meet the fidelity targets on a small
generated session with any summarizer. Each level's own floor is pinned in
tests/engine/compaction/."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import CompactionFailed, Settings, thresholds, validate_messages
from nbagent.compaction import (
    LADDER,
    context_collapse,
    floor_budget,
    session_memory_compact,
    snip_old_tools,
    with_pins,
)
from nbagent.engine import LadderContext, is_pins
from tests.engine.compaction.sessions import (
    KNOBS,
    Messages,
    data_session,
)
from tests.helpers import nine_sections, tokens

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import fidelity  # noqa: E402

# -- counts: given once, reused --------------------------------------------------------------

_SIZES = Settings(keep_recent_turns=2, memory_tail_min_tokens=KNOBS["tail_min_tokens"],
                  memory_tail_max_tokens=KNOBS["tail_max_tokens"],
                  memory_tail_min_messages=KNOBS["tail_min_messages"], memory_min_fold_tokens=0)
_CONTEXT = LadderContext(_SIZES, thresholds("claude-sonnet-4-5", settings=_SIZES),
                         lambda _: nine_sections(),
                         overflow=(9000, 3000))  # "prompt is too long: 9000 tokens > 3000 maximum"
LEVELS: dict[str, Any] = {  # every row of the ladder, as the controller binds it, and L5
    **{rung.name: rung.bind(_CONTEXT) for rung in LADDER},
    "L5": lambda m, c: context_collapse(m, 100, counts=c),
}


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_given_counts_give_the_same_result_as_estimating(level: str) -> None:
    messages = data_session()
    counts = [tokens([m]) for m in messages]
    assert list(LEVELS[level](messages, counts)) == list(LEVELS[level](messages, None))
    with pytest.raises(ValueError, match="token counts for"):
        LEVELS[level](messages, counts[:-1])


# -- pins and the notebook state ---------------------------------------------------------------


def test_every_level_keeps_pins_verbatim() -> None:
    messages = with_pins(data_session(), ["never drop the 2019 rows"])
    for level in LEVELS.values():
        assert [m for m in level(messages, None) if is_pins(m)] == [messages[1]]


# -- the fidelity targets, on a small generated session ----------------------------------------

SUMMARIZERS = {"garbage": fidelity.garbage, "bland": fidelity.bland,
               "truncating": fidelity.truncating, "raising": fidelity.raising}


def ladder(messages: Messages, summarize: Any, trigger: int) -> Messages:
    """The levels as the controller composes them: L1, then L2 (the floor alone when the
    summarizer fails)."""
    snipped = snip_old_tools(messages, keep_recent_turns=4)
    work = list(snipped) if snipped.changed else messages
    if tokens(work) < trigger:
        return work
    knobs = {**KNOBS, "floor_tokens_budget": floor_budget(trigger)}
    try:
        return list(session_memory_compact(work, summarize, **knobs))
    except CompactionFailed:
        return list(session_memory_compact(work, None, **knobs))


@pytest.mark.parametrize("name", sorted(SUMMARIZERS))
def test_the_levels_meet_the_fidelity_targets_with_any_summarizer(name: str) -> None:
    generated = fidelity.make_session(7, rounds=30)
    trigger = 3_000
    messages: Messages = [fidelity.SYSTEM]
    first = generated.rounds[0].messages[0]["content"]
    for round_ in generated.rounds:
        messages = messages + round_.messages[:1]
        if tokens(messages) >= trigger:
            before = copy.deepcopy(messages)
            messages = ladder(messages, SUMMARIZERS[name], trigger)
            validate_messages(messages)
            assert tokens(messages) < trigger and before != messages
            text = fidelity.visible_text(messages)
            assert first in text and round_.messages[0]["content"] in text
        messages = messages + round_.messages[1:]
    run = fidelity.Run(final=messages, asks_checked=1, first_kept=1, latest_kept=1)
    score = fidelity.score(generated, run)
    assert score.user_messages == 1 and score.decisions == 1
    assert score.identifiers >= 0.95, score.missing


@pytest.mark.parametrize("name", sorted(SUMMARIZERS))
def test_the_controller_meets_the_fidelity_targets(name: str) -> None:
    generated = fidelity.make_session(3, rounds=40)
    run = fidelity.run_controller(generated, SUMMARIZERS[name])
    score = fidelity.score(generated, run)
    assert score.compactions >= 2
    assert score.first_ask == 1 and score.latest_ask == 1
    assert score.user_messages == 1 and score.decisions == 1
    assert score.identifiers >= 0.95, score.missing
    assert score.tokens_after < score.trigger and score.peak_tokens < fidelity.WINDOW
