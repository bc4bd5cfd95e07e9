"""L1 on its own (`snip_old_tools`): old tool results become a placeholder with a digest
of what they held, oldest first down to a target, in batches worth a cache rewrite; short
results stay; a second run changes nothing."""

from __future__ import annotations

import copy
from typing import Any

from nbagent import validate_messages
from nbagent.compaction import (
    snip_old_tools,
)
from nbagent.engine import (
    is_snipped,
    snip_placeholder,
)
from tests.helpers import session, tokens, tool_round


def results(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_snip_clears_results_older_than_the_kept_rounds_and_keeps_calls() -> None:
    messages = session(12)
    before = copy.deepcopy(messages)
    snipped = snip_old_tools(messages, keep_recent_turns=10)
    assert snipped.changed and messages == before  # input untouched
    assert results(snipped)[0].startswith(snip_placeholder("call-0"))
    assert results(snipped)[1].startswith(snip_placeholder("call-1"))
    assert 'recall(query="call-0")' in results(snipped)[0]
    assert "Names: col_0" in results(snipped)[0]  # the digest of what it held
    assert results(snipped)[2:] == results(messages)[2:]
    assert [m.get("tool_calls") for m in snipped] == [m.get("tool_calls") for m in messages]
    validate_messages(snipped)


def test_snip_stops_at_the_target_oldest_first() -> None:
    messages = session(12)
    one_result = tokens(messages) - tokens(snip_old_tools(messages, keep_recent_turns=11))
    target = tokens(messages) - one_result - 10
    snipped = snip_old_tools(messages, keep_recent_turns=0, target_tokens=target)
    assert all(map(is_snipped, results(snipped)[:2]))
    assert results(snipped)[2:] == results(messages)[2:]


def test_snip_skips_a_batch_too_small_to_pay_for_the_cache_rewrite() -> None:
    messages = session(12)
    snipped = snip_old_tools(messages, keep_recent_turns=10, min_free_tokens=1_000_000)
    assert not snipped.changed and list(snipped) == messages
    assert "batch minimum" in snipped.reason


def test_snip_leaves_short_results_alone_and_is_idempotent() -> None:
    messages = session(3) + tool_round(3, result="ok")
    once = snip_old_tools(messages, keep_recent_turns=0)
    assert results(once)[-1] == "ok"
    twice = snip_old_tools(once, keep_recent_turns=0)
    assert not twice.changed and list(twice) == list(once)


