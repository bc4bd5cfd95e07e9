"""A compaction's decision record is built from the attempt by `Decision`'s own field
list: every field of every decision a real controller makes — a compaction's and a quiet
one's (off, or under the trigger) — is set from the attempt (a field added to `Decision`
that the attempt does not know fails here). The attempt's own rules are
tests/engine/test_attempt.py's."""

from __future__ import annotations

import pytest

from nbagent import CompactionController, Decision, History, Settings
from nbagent.testing import ScriptedSummarizer
from tests.helpers import session

NOTES = "- notes about sales_df"


def decisions_of(summarize: ScriptedSummarizer, **settings: int) -> list[Decision]:
    ctl = CompactionController(summarize=summarize, window="local/test",
                               settings=Settings(max_context_tokens=8_192, **settings))
    ctl.compact_now(History(session(12)))
    ctl.maybe_compact(History(session(12)))
    return list(ctl.decisions)


@pytest.mark.parametrize(
    ("summarize", "settings"),
    [(ScriptedSummarizer(default=NOTES), {"snip_batch_tokens": 0}),
     (ScriptedSummarizer(default=RuntimeError("down")), {"snip_batch_tokens": 10**9}),
     (ScriptedSummarizer(default=RuntimeError("down")), {})],
    ids=["compacted", "summarizer-down", "summarizer-down-snip"],
)
def test_every_field_of_every_decision_is_set_from_the_attempt(
        summarize: ScriptedSummarizer, settings: dict[str, int]) -> None:
    made = decisions_of(summarize, **settings)
    assert made  # each run made decisions through an attempt
    for decision in made:
        unset = set(Decision.model_fields) - decision.model_fields_set
        assert not unset, f"Decision fields the attempt leaves at their default: {unset}"


@pytest.mark.parametrize("off", [False, True], ids=["under-the-trigger", "auto-off"])
def test_a_quiet_decision_sets_every_field_from_an_attempt_too(off: bool) -> None:
    ctl = CompactionController(window="local/test", settings=Settings(
        max_context_tokens=8_192, disable_compact=off))
    small = History(session(1))
    for decision in (ctl.maybe_compact(small), ctl.on_tool_result(small)):
        assert decision.action == "none" and not decision.changed and not decision.levels
        unset = set(Decision.model_fields) - decision.model_fields_set
        assert not unset, f"Decision fields a quiet decision leaves at their default: {unset}"


