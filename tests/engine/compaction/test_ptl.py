"""L4 (`ptl_fallback`), after "prompt too long": the oldest whole rounds dropped until
under 90% of the stated limit (calibrated by the provider's own count), their floor kept
in one block with the first request leading; three rounds when no limit is stated."""

from __future__ import annotations

from nbagent import validate_messages
from nbagent.compaction import (
    ptl_fallback,
)
from nbagent.engine import (
    is_memory,
    is_plain_user,
)
from nbagent.providers import parse_token_limits
from nbagent.testing import parse_floor
from tests.engine.compaction.sessions import (
    data_session,
)
from tests.helpers import SYSTEM, session, tokens


def test_ptl_drops_the_oldest_rounds_until_under_ninety_percent_of_the_limit() -> None:
    messages = session(10)
    size = tokens(messages)
    limit = size // 2
    dropped = ptl_fallback(messages, parse_token_limits(f"prompt is too long: {size} tokens > {limit} maximum"))
    assert dropped.changed and tokens(dropped) <= 0.9 * limit
    assert dropped[0] == SYSTEM and is_memory(dropped[1])
    kept = parse_floor(dropped[1]["content"]).user_messages  # the first request leads, whole
    assert kept[0] == messages[1]["content"] and kept[1].startswith("question 1: describe")
    assert not any(m == messages[1] for m in dropped[2:])  # once, in the block
    assert dropped[-4:] == messages[-4:]  # the newest round stays
    validate_messages(dropped)
    fewer = ptl_fallback(
        messages, parse_token_limits(
            f"prompt is too long: {size} tokens > {limit + limit // 2} maximum")
    )
    assert len(fewer) > len(dropped)  # it stops as soon as it fits


def test_ptl_uses_the_providers_count_to_calibrate() -> None:
    messages = session(10)
    limit = tokens(messages)  # we think it fits; the provider counted twice as many
    dropped = ptl_fallback(messages, parse_token_limits(f"prompt is too long: {2 * limit} tokens > {limit} maximum"))
    assert tokens(dropped) <= 0.9 * limit / 2


def test_ptl_without_a_limit_drops_three_rounds() -> None:
    messages = session(6)
    dropped = ptl_fallback(messages, parse_token_limits("Input is too long for requested model."))
    asks = [m["content"] for m in dropped if is_plain_user(m)]
    assert parse_floor(dropped[1]["content"]).user_messages[0] == messages[1]["content"]
    assert [a.split(":")[0] for a in asks] == ["question 3", "question 4", "question 5"]
    assert "no limit" in dropped.reason


def test_ptl_with_one_round_cannot_drop_anything() -> None:
    messages = session(1)
    assert not ptl_fallback(messages, parse_token_limits("prompt is too long: 9 tokens > 5 maximum")).changed


def test_dropped_rounds_leave_their_floor_and_still_fit() -> None:
    messages = data_session()
    size = tokens(messages)
    dropped = ptl_fallback(messages, parse_token_limits(f"prompt is too long: {size} tokens > {size // 2} maximum"))
    assert tokens(dropped) <= 0.9 * size // 2
    block = next(m["content"] for m in dropped if is_memory(m))
    assert "Use dose_mg. From now on exclude the pilot clinic." in block


def test_overflow_uses_the_given_counts() -> None:
    messages = session(10)
    error = parse_token_limits("prompt is too long: 12000 tokens > 10000 maximum")  # 20% over
    plain = ptl_fallback(messages, error, keep_floor=False)
    inflated = ptl_fallback(messages, error, keep_floor=False,
                            counts=[1] + [100] * 20 + [1_000] * (len(messages) - 21))
    assert len(inflated) < len(plain)  # the big (counted) recent rounds force a deeper cut
