"""The floor keeps only real identifiers: names that occur as code, paths, columns or
variables in what the user, the code or the tools wrote — not the words of a focus
instruction a summarizer turned into a name, not a column the model's prose invented."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.compaction import extract_floor, full_compact, session_memory_compact
from nbagent.engine import is_memory
from nbagent.engine.compaction._memory_blocks import merge_blocks
from nbagent.testing import ScriptedSummarizer, kept_floor, parse_floor
from tests.engine.compaction.sessions import python_round
from tests.helpers import SYSTEM, nine_sections, tool_round

Messages = list[dict[str, Any]]
KNOBS = {"tail_min_tokens": 300, "tail_max_tokens": 600, "tail_min_messages": 4}
REAL = {"data/shop/orders.csv", "orders", "order_id", "unit_price", "ship_region"}


def shop_session(answer: str = "Loaded.") -> Messages:
    messages: Messages = [SYSTEM]
    messages += python_round(0, "Load data/shop/orders.csv.",
                             "orders = pd.read_csv('data/shop/orders.csv')\norders.columns",
                             "Index(['order_id', 'unit_price', 'ship_region'], dtype='object')",
                             answer)
    for t in range(1, 8):
        messages += tool_round(t)
    return messages


@pytest.mark.parametrize(("answer", "invented"), [
    ("I added `revenue_eur` to orders for you.", {"revenue_eur"}),
    ("The net_margin_pct and churnScore columns look fine.", {"net_margin_pct", "churnScore"}),
    ("orders.discount_rate is mostly zero; see data/shop/returns.parquet.",
     {"orders.discount_rate", "data/shop/returns.parquet"}),
], ids=["backticked", "snake-and-camel", "dotted-and-path"])
def test_a_name_only_the_assistants_prose_shows_is_not_kept(answer: str,
                                                            invented: set[str]) -> None:
    found = set(extract_floor(shop_session(answer)).names)
    assert REAL <= found
    assert not invented & found


@pytest.mark.parametrize(("answer", "where"), [
    ("I'll use unit_price, as the table shows.", "a tool result"),
    ("Run this next:\n```python\norders['price_eur'] = orders.unit_price * 0.92\n```",
     "the model's own code"),
], ids=["in-a-tool-result", "in-fenced-code"])
def test_a_name_the_prose_shows_is_kept_when_code_or_a_tool_shows_it(answer: str,
                                                                     where: str) -> None:
    found = set(extract_floor(shop_session(answer)).names)
    assert "unit_price" in found if where == "a tool result" else "price_eur" in found


def test_a_name_the_user_wrote_is_real_even_if_only_the_prose_repeats_it() -> None:
    messages = shop_session("I'll compute basket_size next.")
    messages += python_round(9, "Yes, add basket_size per order.", "orders.shape", "(10, 3)",
                             "Done.")
    assert "basket_size" in extract_floor(messages).names


FOCUS_NOTES = [  # a summarizer that turns the focus instruction into names
    ("keep the column names", "- keep_column names: order_id, unit_price, ship_region"),
    ("preserve every file path", "- preserve_paths: data/shop/orders.csv (orders)"),
    ("remember the user's decisions", "- rememberDecisions: user_decisions none yet; "
                                      "orders loaded with unit_price"),
]


@pytest.mark.parametrize(("focus", "notes"), FOCUS_NOTES, ids=["columns", "paths", "decisions"])
def test_words_of_a_focus_instruction_never_become_kept_names(focus: str, notes: str) -> None:
    invented = {"keep_column", "preserve_paths", "rememberDecisions", "user_decisions"}
    memory = session_memory_compact(shop_session(), ScriptedSummarizer([notes] * 4),
                                    focus=focus, **KNOBS)
    block = memory[1]["content"]
    assert is_memory(memory[1]) and notes in block  # the notes are the summarizer's text
    kept = set(kept_floor(block).names)
    assert not invented & kept and {"order_id", "orders"} <= kept
    assert not invented & set(parse_floor(block).names)  # nor printed as the floor's
    # a merge by the summarizer or by code, and a summary after it, keep them out too
    second = session_memory_compact([*memory, *tool_round(20), *tool_round(21)],
                                    ScriptedSummarizer(["- col_20 checked"] * 4), **KNOBS)
    blocks = [m for m in second if is_memory(m)]
    for summarize in (ScriptedSummarizer([f"{notes}\n- merged"] * 2), None):
        merged = merge_blocks(blocks, summarize, 400, extract_floor(shop_session()))[0]
        assert not invented & set(kept_floor(merged["content"]).names)
    summary = full_compact(list(second), ScriptedSummarizer([nine_sections("Bland")]))
    assert not invented & set(parse_floor(summary[1]["content"]).names)
    assert {"order_id", "data/shop/orders.csv"} <= set(parse_floor(summary[1]["content"]).names)
