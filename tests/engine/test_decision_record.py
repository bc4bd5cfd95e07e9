"""A compaction's decision record is built from the attempt by `Decision`'s own field
list: every field of every decision a real controller makes is set from the attempt (a
field added to `Decision` that the attempt does not know fails here), values recorded
elsewhere reach it, and a name Decision does not have is refused."""

from __future__ import annotations

import pytest

from nbagent import CompactionController, Decision, History, Settings
from nbagent.engine._attempt import Attempt
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


def test_a_bare_attempt_gives_its_own_values_by_the_decision_s_names() -> None:
    attempt = Attempt("manual", 1_000, 800, "sales")
    attempt.spent(2, 0.01)
    fields = attempt.decision_fields("failed", 1_000, swapped=False, failures=1,
                                     breaker_open=False)
    assert set(fields) <= set(Decision.model_fields)
    assert (fields["tokens_before"], fields["summary_calls"], fields["threshold"]) == (
        1_000, 2, 800)
    assert fields["focus"] == "sales" and fields["trigger"] == "manual"
    assert fields["summary"] is None and fields["left_view"] is None and not fields["undone"]


def test_a_recorded_value_reaches_the_decision_only_when_the_history_was_swapped() -> None:
    attempt = Attempt("auto", 1_000, 800, None)
    attempt.levels.append("L1 snip")
    attempt.record(left_view="Left the view: 3 old tool outputs cleared")
    kept = attempt.decision("compacted", 600, swapped=True, failures=0, breaker_open=False)
    assert kept.left_view == "Left the view: 3 old tool outputs cleared"
    assert kept.levels == ["L1 snip"] and kept.tokens_after == 600 and kept.changed
    dropped = attempt.decision("failed", 1_000, swapped=False, failures=1, breaker_open=False)
    assert dropped.left_view is None and not dropped.changed


def test_recording_a_name_decision_does_not_have_is_refused() -> None:
    attempt = Attempt("auto", 1_000, 800, None)
    with pytest.raises(TypeError, match="not fields of Decision: left_veiw"):
        attempt.record(left_veiw="typo")
