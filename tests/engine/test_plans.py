"""What a level is about to do, in its status line: the snip line counts the outputs it
will clear, and no line says it clears nothing."""

from __future__ import annotations

from nbagent import History
from tests.helpers import controller, session, statuses


def test_the_snip_line_counts_the_outputs_it_will_clear() -> None:
    ctl, seen = controller(None, snip_batch_tokens=0, keep_recent_turns=2)
    history = History(session(12))
    decision = ctl.compact_now(history)
    assert statuses(seen)[0].startswith("clearing 10 old tool outputs (~")
    assert "cleared 10 old tool results" in decision.reason


def test_no_line_says_it_clears_nothing() -> None:
    ctl, seen = controller(None, keep_recent_turns=100)  # no tool output is old enough
    ctl.compact_now(History(session(12)))
    lines = statuses(seen)
    assert lines and not any("clearing 0" in line or "(~0 tokens)" in line for line in lines)
