"""What left the model's view, on each decision: the turns folded or the outputs cleared,
with how to bring them back (recall, undo); nothing when nothing changed."""

from __future__ import annotations

from nbagent import History
from nbagent.testing import ScriptedSummarizer
from tests.helpers import controller, session

NOTES = "- notes about sales_df"


def test_each_decision_says_what_left_the_view_and_how_to_get_it_back() -> None:
    ctl, _ = controller(ScriptedSummarizer(default=NOTES), snip_batch_tokens=0)
    decision = ctl.compact_now(History(session(12)))
    assert decision.left_view is not None
    assert decision.left_view.startswith("Left the view: turns 1–")
    assert "folded" in decision.left_view and "tokens" in decision.left_view
    assert "recall" in decision.left_view and "agent.undo_compaction()" in decision.left_view
    assert "%" not in decision.left_view


def test_a_snip_alone_says_how_many_outputs_were_cleared() -> None:
    ctl, _ = controller(None, snip_batch_tokens=0, keep_recent_turns=2)
    decision = ctl.on_tool_result(History(session(12)))
    assert decision.levels == ["L1 snip"]
    assert decision.left_view is not None and "old tool outputs cleared" in decision.left_view
    assert "folded" not in decision.left_view


def test_a_decision_that_changed_nothing_has_no_left_view() -> None:
    ctl, _ = controller(ScriptedSummarizer())
    assert ctl.maybe_compact(History(session(2))).left_view is None
