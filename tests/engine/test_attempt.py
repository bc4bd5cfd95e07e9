"""`Attempt`: what one compaction attempt did, given to its Decision by the Decision's own
field names (renamed ones too); a value recorded elsewhere reaches the decision only when
the history was swapped, and a name Decision does not have is refused."""

from __future__ import annotations

import pytest

from nbagent import Decision
from nbagent.engine._attempt import Attempt


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
