"""A preview of the compaction that would run now: no summarizer call, nothing changed,
and figures that match what the compaction then does."""

from __future__ import annotations

import copy
from typing import Any

from nbagent import CompactionController, History, Preview, Settings
from nbagent.compaction import with_pins
from nbagent.testing import ScriptedSummarizer
from tests.helpers import session, tool_round

SETTINGS = Settings(max_context_tokens=8_192, snip_batch_tokens=0)


def analysis() -> list[dict[str, Any]]:
    messages = with_pins(session(10), ["the fiscal year starts in April"])
    messages += tool_round(10, question="Which region fell most?")[:-1]
    messages.append({"role": "assistant",
                     "content": "revenue_usd in EMEA-North fell 18.4% from October to December."})
    for t in range(11, 14):
        messages += tool_round(t)
    return messages


def test_a_preview_calls_no_model_and_changes_nothing() -> None:
    summarize = ScriptedSummarizer()
    ctl = CompactionController(summarize=summarize, window="local/test", settings=SETTINGS)
    history = History(analysis())
    before = copy.deepcopy(history.messages)
    seen: list[Any] = []
    ctl.events.subscribe(seen.append)
    preview = ctl.preview(history, focus="keep the regions")
    assert isinstance(preview, Preview)
    assert summarize.calls == 0 and seen == [] and list(ctl.decisions) == []
    assert history.messages == before and history.generation == 0
    # the levels that would act, as the decision then names them (L3 only if L2 could not run)
    assert preview.calls_model and preview.levels == ("L1 snip", "L2 memory")
    assert preview.focus == "keep the regions"


def test_a_preview_names_the_levels_the_compaction_then_records() -> None:
    ctl = CompactionController(summarize=ScriptedSummarizer(default="- notes about regions"),
                               window="local/test", settings=SETTINGS)
    history = History(analysis())
    preview = ctl.preview(history)
    decision = ctl.compact_now(history)
    assert decision.levels == list(preview.levels) == ["L1 snip", "L2 memory"]
    assert preview.calls_model and decision.summary_calls > 0


def test_a_preview_says_what_would_fold_clear_and_keep() -> None:
    ctl = CompactionController(summarize=ScriptedSummarizer(), window="local/test",
                               settings=SETTINGS)
    preview = ctl.preview(History(analysis()))
    assert preview.changes and preview.folded_turns[0] == 1
    assert preview.folded_turns == tuple(range(1, len(preview.folded_turns) + 1))
    assert preview.tokens_removed > 0 and preview.tokens_after < preview.tokens_before
    assert 0 < preview.cache_rewrite <= preview.tokens_after
    assert "data/sales.csv" in preview.keeps_names and "sales_df" in preview.keeps_names
    assert preview.keeps_user_messages >= len(preview.folded_turns)
    assert any("18.4%" in r for r in preview.keeps_results)
    assert preview.pins == ("the fiscal year starts in April",)
    text = preview.text()
    assert text.startswith("A compaction now runs L1 snip → L2 memory (calls the summarizer)")
    assert "folds turns 1–" in text and "pinned facts kept verbatim: 1" in text
    assert f"{preview.tokens_before:,} → {preview.tokens_after:,}" in text and "%" not in text


def test_without_a_summarizer_the_preview_is_exactly_what_then_happens() -> None:
    ctl = CompactionController(window="local/test", settings=SETTINGS)
    history = History(analysis())
    preview = ctl.preview(history)
    assert not preview.calls_model
    decision = ctl.compact_now(history)
    assert decision.levels == list(preview.levels)
    assert decision.tokens_after == preview.tokens_after
    assert decision.left_view is not None
    assert f"~{preview.tokens_removed:,} tokens" in decision.left_view


def test_a_preview_with_nothing_to_do_says_so() -> None:
    ctl = CompactionController(window="local/test", settings=SETTINGS)
    preview = ctl.preview(History(session(1)))
    assert not preview.changes and preview.text().startswith("A compaction now would change")
