"""The user's messages in a floor (`_users`): a message that decides something is told
apart from one that does not; shortening keeps the leading sentences and the later ones
that decide, marked as shortened; fitting into a budget keeps the first and the latest
whole and never drops one silently."""

from __future__ import annotations

import pytest

from nbagent.engine import SHORTENED
from nbagent.engine.compaction._users import decides, fit_users, shorten_user_message


@pytest.mark.parametrize(("text", "decision"), [
    ("From now on exclude the pilot clinic.", True),
    ("Looks fine. Please drop the rows from 2019.", True),
    ("We should use the median here.", True),
    ("Show me the first rows of sales_df.", False),
    ("What is the mean revenue per region?", False),
], ids=["from-now-on", "please-drop", "we-should", "show", "question"])
def test_a_message_that_decides_is_told_apart(text: str, decision: bool) -> None:
    assert decides(text) is decision


def test_shortening_keeps_the_lead_and_the_sentences_that_decide() -> None:
    text = ("Thanks, the plot looks good and the colours are fine for the report. "
            "The axis labels could be larger but that can wait for later. "
            "I had a long meeting today about the quarterly numbers and the budget. "
            "From now on exclude the pilot clinic from every average.")
    short = shorten_user_message(text)
    assert short.startswith("Thanks, the plot looks good") and short.endswith(SHORTENED)
    assert "From now on exclude the pilot clinic" in short  # the decision outlives the cut
    assert "long meeting" not in short and len(short) < len(text)
    assert shorten_user_message(short) == short  # shortened once
    assert shorten_user_message("Plot it.") == "Plot it."  # short enough already


def test_fitting_keeps_the_first_and_latest_whole_and_counts_what_it_leaves_out() -> None:
    asks = [f"Question {i}: look at region r_{i} again and tell me what changed there."
            for i in range(60)]
    assert fit_users(asks, 10**6, True, True) == asks  # room for all: unchanged
    kept = fit_users(asks, 150, True, True)
    assert kept[0] == asks[0] and kept[-1] == asks[-1]
    left_out = [k for k in kept if "user messages left out here" in k]
    assert len(left_out) == 1
    counted = int(left_out[0].split()[0][1:])
    shown = sum(1 for k in kept if k not in left_out)
    assert shown + counted == len(asks)  # every message shown or counted


def test_when_only_protected_messages_are_over_the_budget_none_is_left_out() -> None:
    """The first whole (L4's block) and the last kept: nothing may be left out, so they
    come back as they are, over the budget (it raised on an empty `min`: hypothesis found
    it in test_compaction_properties with a short request and a one-character ask)."""
    texts = ["the request: " + "keep every column of sales " * 30, "and the last ask " * 30]
    kept = fit_users(texts, 10, keep_first=False, keep_last=True, whole_first=True)
    assert kept[0] == texts[0] and len(kept) == 2
