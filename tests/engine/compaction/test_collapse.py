"""L5 (`context_collapse`): large tool results cut in place to their head and a marker
counting what was removed; idempotent."""

from __future__ import annotations

from typing import Any

from nbagent.compaction import (
    context_collapse,
)
from tests.helpers import session


def results(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_collapse_cuts_large_results_with_a_count_and_is_idempotent() -> None:
    messages = session(2)
    collapsed = context_collapse(messages, max_chars=50)
    cut = results(collapsed)[0]
    removed = len(results(messages)[0]) - 50
    assert (
        cut.startswith(results(messages)[0][:50])
        and f"[... {removed:,} characters removed ...]" in cut
    )
    assert list(context_collapse(collapsed, max_chars=50)) == list(collapsed)
    assert not context_collapse(collapsed, max_chars=50).changed
