"""A decision is put into words once (`Decision.words`): the notebook's line
(`decision_words`), the meter's last compaction (`compaction_text`) and the demo's line
(`describe_decision`) say the same decision in the same words, what left the view too."""

from __future__ import annotations

from typing import Any

import pytest
from nbagent.widgets import compaction_text, decision_words, left_view_words

from nbagent import Decision
from nbagent.demo import describe_decision
from nbagent.engine import TRIGGER_WORDS

LEFT = "Left the view: turns 1–4 folded into the session memory (~1,200 tokens)"


def decision(**fields: Any) -> Decision:
    base: dict[str, Any] = dict(action="compacted", trigger="auto",
                                levels=["L1 snip", "L2 memory"], reason="", tokens_before=6_900,
                                tokens_after=1_200, threshold=6_841, changed=True,
                                summary_calls=1, left_view=LEFT)
    return Decision(**{**base, **fields})


CASES = {
    "compacted": decision(),
    "undone": decision(undone=True),
    "failed": decision(action="failed", changed=False, left_view=None, failures=2,
                       reason="the summarizer timed out"),
    "nothing": decision(action="none", trigger="manual", levels=[], changed=False,
                        left_view=None, reason="under the trigger"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_notebook_the_meter_and_the_demo_say_a_decision_in_the_same_words(
        name: str) -> None:
    made = CASES[name]
    words = decision_words(made)
    assert words == made.words()
    demo = describe_decision(made).splitlines()
    assert demo[0] == f"  ↳ {made.words(trigger=True)}"
    when = TRIGGER_WORDS[made.trigger]  # the demo says when, after the notebook's verb
    assert demo[0].removeprefix("  ↳ ").replace(f" {when}", "", 1) == words
    assert "compaction compacted" not in demo[0]
    if made.changed:  # the meter's short form (it shows only these): the same figures
        short = compaction_text(made)
        assert "(" + short.removesuffix(" (undone)").replace(": ", "): ", 1) in words
        assert short.endswith(" (undone)") == made.undone == words.endswith(" — undone")


def test_what_left_the_view_is_said_alike_and_only_while_it_is_out() -> None:
    shown = CASES["compacted"]
    assert describe_decision(shown).splitlines()[1] == f"    {LEFT}"
    assert shown.left_view_words() == LEFT
    assert left_view_words(shown) == LEFT  # nothing in it names a Python call to translate
    for back in (CASES["undone"], CASES["failed"]):
        assert back.left_view_words() == "" == left_view_words(back)
        assert LEFT not in describe_decision(back)


def test_the_demo_shows_the_failures_in_a_row_under_a_failure() -> None:
    lines = describe_decision(CASES["failed"]).splitlines()
    assert lines == ["  ↳ compaction failed at the auto-compact trigger: the summarizer timed "
                     "out — the history is unchanged (6,900 tokens)", "    (failures in a row: 2)"]
    assert describe_decision(CASES["compacted"]).splitlines()[0] == (
        "  ↳ compacted at the auto-compact trigger (L1 snip → L2 memory): 6,900 → 1,200 "
        "tokens, 1 summarizer call")


@pytest.mark.parametrize(("tokens", "settings", "breaker"), [
    (500, {}, False), (6_200, {}, False), (6_750, {}, False), (7_900, {}, False),
    (6_750, {"disable_compact": True}, False), (500, {}, True)],
    ids=["ok", "warning", "compacting soon", "blocked", "auto-compact off", "breaker open"])
def test_the_demos_context_line_is_the_notebooks_meter_line(
        tokens: int, settings: dict[str, Any], breaker: bool) -> None:
    from nbagent.widgets import MeterReading, notebook_words

    from nbagent import Settings, context_state, resolve_window
    from nbagent.demo import describe

    chosen = Settings(max_context_tokens=8_192, **settings)
    window = resolve_window("local/test", settings=chosen)
    state = context_state(window, tokens, breaker_open=breaker, settings=chosen)
    shown = MeterReading.of(state).text().removeprefix("nbagent: ")
    assert notebook_words(describe(state)) == f"[{shown}]"
    assert "(error)" not in describe(state)  # the meter's words, not the level's name
