"""The floor level (`floor_only`, the ladder's "L3 floor"): compaction with no model call.
Old rounds fold into a memory block of what code keeps, the tail verbatim; with too
little to fold, the whole conversation's floor in L3's form. Chosen on purpose it is not
degraded and counts no summarizer call."""

from __future__ import annotations

from typing import Any

from nbagent.compaction import LADDER
from nbagent.engine import is_memory, is_summary
from nbagent.testing import parse_floor
from tests.helpers import SYSTEM, session

FLOOR = next(rung.function for rung in LADDER if rung.name == "L3 floor")
TAIL: dict[str, Any] = {"tail_min_tokens": 1_500, "tail_max_tokens": 3_000, "tail_min_messages": 4}


def test_old_rounds_fold_into_the_floor_with_no_model_call() -> None:
    messages = session(10)
    result = FLOOR(messages, **TAIL)
    assert result.changed and not result.degraded and result.summary_calls == 0
    assert result[0] == SYSTEM and is_memory(result[1])
    assert result.reason.startswith("kept the deterministic floor (no model call): ")
    assert messages[1]["content"] in parse_floor(result[1]["content"]).user_messages
    assert list(result[2:]) == messages[len(messages) - len(result) + 2:]  # tail verbatim


def test_with_too_little_to_fold_the_floor_takes_the_summary_form() -> None:
    messages = session(3) + [{"role": "user", "content": "Now plot col_5 by region."}]
    result = FLOOR(messages, tail_min_tokens=10**6, tail_max_tokens=10**6, tail_min_messages=1)
    assert result.changed and not result.degraded and result.summary_calls == 0
    assert is_summary(result[1]) and result[-1] == messages[-1]
    assert messages[1]["content"] in result[1]["content"]  # the first request, kept by code
