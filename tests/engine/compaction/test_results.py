"""Results survive like identifiers: the sentences where the assistant reported a figure
about a subject are kept by the floor, bounded, through merges and later levels; a
summary section that says "None." while the floor has content for it is filled."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.compaction import (
    extract_floor,
    full_compact,
    parse_sections,
    ptl_fallback,
    session_memory_compact,
)
from nbagent.engine import RESULTS_HEADING, estimate_tokens, is_memory
from nbagent.engine.compaction._floor_render import RESULTS_SHARE, render_floor
from nbagent.engine.compaction._results import results_in
from nbagent.providers import parse_token_limits
from nbagent.testing import ScriptedSummarizer, parse_floor
from tests.helpers import SYSTEM, nine_sections, tool_round

FINDING = "revenue_usd in EMEA-North fell 18.4% from October to December."
KNOBS: dict[str, Any] = {"tail_min_tokens": 600, "tail_max_tokens": 1_200,
                         "tail_min_messages": 4}


@pytest.mark.parametrize(("text", "kept"), [
    (FINDING, [FINDING]),
    ("There are 1,204 rows and 12 columns. I will plot it next.",
     ["There are 1,204 rows and 12 columns."]),
    ("- **Churn** is 0.27 for premium users.", ["Churn is 0.27 for premium users."]),
    ("The first order was on 2024-03-07 in Lisbon.", ["The first order was on 2024-03-07 in Lisbon."]),
    ("Sales peaked in March 2024 across the north.", ["Sales peaked in March 2024 across the north."]),
    ("I loaded data/sales.csv into sales_df.", []),
    ("Let me check col_3 for you.", []),
    ("```python\nx = 3.5 * total_sales\n```", []),
    ("| region | 18.4 |", []),
], ids=["percentage", "counts", "bullet", "date", "month-year", "no-figure", "name-digit",
        "code", "table-row"])
def test_a_result_is_a_sentence_stating_a_figure_about_a_subject(text: str, kept: list[str]
                                                                 ) -> None:
    assert results_in(text) == kept


def analysis(rounds: int = 12) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [SYSTEM]
    for t in range(rounds):
        messages += tool_round(t, question="Load data/sales.csv into sales_df." if t == 0 else None)
        if t == 2:
            messages[-1] = {"role": "assistant", "content": f"Done. {FINDING}"}
    return messages


def test_the_floor_keeps_reported_results_and_reads_them_back() -> None:
    floor = extract_floor(analysis())
    assert FINDING in floor.results
    text = render_floor(floor, 2_000)
    assert f"{RESULTS_HEADING}\n" in text and FINDING in parse_floor(text).results


def test_results_are_bounded_by_their_share_newest_first() -> None:
    floor = extract_floor([{"role": "assistant", "content": " ".join(
        f"Region r_{i} grew {i}.5% in the quarter." for i in range(200))}])
    assert len(floor.results) == 60  # the latest, before the budget
    text = render_floor(floor, 1_000)
    kept = parse_floor(text).results
    assert 0 < len(kept) < 60 and kept[-1] == "Region r_199 grew 199.5% in the quarter."
    assert sum(estimate_tokens(r) + 2 for r in kept) <= 1_000 * RESULTS_SHARE


def test_a_result_survives_memory_folds_merges_and_a_summary() -> None:
    summarize = ScriptedSummarizer(default="- notes about sales_df")  # a weak summarizer
    messages = analysis()
    messages = list(session_memory_compact(messages, summarize, **KNOBS))
    assert any(FINDING in m["content"] for m in messages if is_memory(m))
    for t in range(12, 30, 6):
        messages += [m for u in range(t, t + 6) for m in tool_round(u)]
        messages = list(session_memory_compact(messages, summarize, memory_max_tokens=50,
                                               floor_tokens_budget=1_500, **KNOBS))
    assert any(FINDING in m["content"] for m in messages if is_memory(m))  # merged, kept
    summary = full_compact(messages, ScriptedSummarizer(default=nine_sections("None.")))
    assert FINDING in summary[1]["content"]
    dropped = ptl_fallback(analysis(), parse_token_limits("prompt is too long: 9000 tokens > 3000 maximum"))
    assert any(FINDING in str(m["content"]) for m in dropped if is_memory(m))


def test_sections_that_say_none_are_filled_from_the_floor() -> None:
    weak = "\n\n".join(f"## {n}. {title}\nNone." for n, title in enumerate(
        ("Primary Request and Intent", "Key Technical Concepts", "Files and Code Sections",
         "Errors and fixes", "Problem Solving", "All user messages", "Pending Tasks",
         "Current Work", "Optional Next Step"), 1))
    result = full_compact(analysis(), ScriptedSummarizer(default=weak))
    sections = parse_sections(result[1]["content"])
    assert "None." not in sections["All user messages"]
    assert "Load data/sales.csv into sales_df." in sections["All user messages"]
    assert sections["Primary Request and Intent"].startswith("The first request: Load data")
    assert "data/sales.csv" in sections["Files and Code Sections"]
    assert FINDING in sections["Problem Solving"]
    assert sections["Current Work"].startswith("The latest request: question 11")
    assert sections["Pending Tasks"] == "None."  # the floor has nothing for it


def test_a_section_with_content_keeps_it_and_gets_the_floor_after_it() -> None:
    summary = nine_sections("the churn analysis of sales_df")
    result = full_compact(analysis(), ScriptedSummarizer(default=summary))
    users = parse_sections(result[1]["content"])["All user messages"]
    assert users.startswith("the churn analysis of sales_df for all user messages")
    assert "Load data/sales.csv into sales_df." in users


