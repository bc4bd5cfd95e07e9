"""The floor: read back from the text it was written as (multi-line, unicode), its budget a
bounded share of the trigger, the names notes show counted as the floor finds them, and
the bounded digest of a tool result a snip placeholder carries."""

from __future__ import annotations

import pytest

from nbagent.compaction import (
    Floor,
    floor_budget,
    snip_old_tools,
)
from nbagent.engine import (
    is_snipped,
)
from nbagent.engine.compaction._floor import digest, names_shown
from nbagent.engine.compaction._floor_render import render_floor
from nbagent.testing import parse_floor
from tests.engine.compaction.sessions import (
    FRAME,
    data_session,
)


def test_a_floor_reads_back_what_it_wrote_even_multiline_and_unicode() -> None:
    floor = Floor(("Load a.csv\n\n  then plot", "Ünïcode ✓ 数据"), ("a.csv", "Unit Price"),
                  ("KeyError: 'x'",))
    assert parse_floor(render_floor(floor, 1_000)) == floor


def test_floor_budget_is_a_bounded_share_of_the_trigger() -> None:
    assert floor_budget(6_841) == 1_710 and floor_budget(200) == 200
    assert floor_budget(900_000) == 2_000  # a large window needs no larger floor


@pytest.mark.parametrize(("text", "names"), [
    ("Loaded data/sales.csv. Then sales_df.groupby('region') and fitModel2!",
     ("data/sales.csv", "sales_df", "fitModel2")),
    ("plain words, a number 3.5 and 2024 only", ()),
    ("We re-ran the follow-up t-test, e.g. the p-value w/o and/or the x-axis; non-null.", ()),
    ("Checked account A-1001 and run-2-b (a follow-up).", ("A-1001", "run-2-b")),
    ("`df_raw`, (col_1); [x_2] {api.v1}", ("df_raw", "col_1", "x_2", "api.v1")),
])
def test_names_shown_are_the_names_the_floor_finds_in_prose(text: str, names: tuple[str, ...]
                                                            ) -> None:
    assert names_shown(text) == names


def test_a_snip_placeholder_carries_a_bounded_digest() -> None:
    snipped = snip_old_tools(data_session(), keep_recent_turns=3, min_chars=50)
    placeholders = [m["content"] for m in snipped if m["role"] == "tool" and is_snipped(m["content"])]
    assert "account_ref" in placeholders[0] and "plan_tier" in placeholders[0]
    assert "KeyError: 'dosage_mg'" in placeholders[1]
    big = FRAME + "\n" + "\n".join(f"col_{i}  " * 40 for i in range(200))
    assert len(digest(big, 400)) <= 400


VISITS = """visits: DataFrame shape (6, 3)
dtypes:
Country               str
Visitor Rating    float64
Visits              int64
dtype: object
head(5):
  Country  Visitor Rating  Visits
0      FR             4.5     120
1     NaN             3.9      80
2      CA             NaN      95
3      PT             4.1      60
4      AT             4.8     150"""


def visits_session(rounds: int = 14) -> list[dict[str, object]]:
    """The visits table described, then many rounds naming other things: a floor budget
    too small for every name."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You help."},
        {"role": "user", "content": "Describe visits"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c0", "type": "function",
            "function": {"name": "describe_variable", "arguments": '{"name": "visits"}'}}]},
        {"role": "tool", "tool_call_id": "c0", "content": VISITS},
        {"role": "assistant", "content": "FR and AT rate highest; CA has a gap."}]
    for n in range(rounds):
        messages += [
            {"role": "user", "content": f"Now look at table_{n} and its metric_{n}_a"},
            {"role": "assistant", "content": f"```python\nframe_{n} = load('t{n}.csv')\n"
                                             f"frame_{n}['metric_{n}_b'].mean()\n```\n"
                                             f"It is {n}.5 on average, per region_{n}."}]
    messages.append({"role": "user", "content": "and what next?"})
    return messages


def garbage(_: object) -> str:
    return "Sure! We had a productive conversation."


def failing(_: object) -> str:
    raise RuntimeError("the summarizer is down")


@pytest.mark.parametrize("summarize", [None, garbage, failing],
                         ids=["no summarizer", "garbage", "failing"])
def test_the_focus_names_are_kept_first_on_every_summarizer_and_cell_values_are_not_names(
        summarize: object) -> None:
    from nbagent import CompactionController, History, Settings
    from nbagent.engine import is_memory, is_summary

    history = History(visits_session())
    controller = CompactionController(summarize=summarize,  # type: ignore[arg-type]
                                      window="local/test",
                                      settings=Settings(max_context_tokens=2_048))
    controller.compact_now(history, focus="Keep Visitor Rating and Country, they matter")
    blocks = [str(m["content"]) for m in history.messages if is_memory(m) or is_summary(m)]
    assert blocks, [m["role"] for m in history.messages]
    kept = {name for block in blocks for name in parse_floor(block).names}
    assert {"Visitor Rating", "Country"} <= kept, kept
    assert not {"FR", "CA", "AT", "NaN", "Visitor", "Rating", "Keep"} & kept, kept
    names = [name for block in blocks for name in parse_floor(block).names]
    assert names[:2] == ["Visitor Rating", "Country"]  # ahead of every other name


def test_a_focus_keeps_only_what_is_folded_and_a_plain_word_is_not_a_name() -> None:
    from nbagent.engine.compaction._floor import extract_floor

    messages = visits_session(rounds=0)
    names = extract_floor(messages, focus="keep 'Net Revenue', Visits and the metric").names
    assert names[0] == "Visits"  # named by the table; "Net Revenue" occurs nowhere
    assert "Net Revenue" not in names and "metric" not in names and "keep" not in names
    assert extract_floor(messages, focus="keep FR").names[0] == "FR"  # asked, and there
