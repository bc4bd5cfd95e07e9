"""The floor: what every level that removes text keeps by code — the user's messages,
paths, DataFrame, column and variable names, error lines — and the blocks the
controller places (pins, notebook state). Ends with the fidelity targets on a small
generated session."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import CompactionFailed, Settings, thresholds, validate_messages
from nbagent.compaction import (
    Floor,
    context_collapse,
    extract_floor,
    floor_budget,
    full_compact,
    notebook_state_of,
    pins_of,
    ptl_fallback,
    session_memory_compact,
    snip_old_tools,
    validate_notes,
    with_notebook_state,
    with_pins,
)
from nbagent.engine._ladder import LADDER
from nbagent.engine._level_context import LadderContext
from nbagent.engine._markers import (
    MEMORY_HEADER,
    PINS_HEADER,
    SHORTENED,
    STATE_HEADER,
    is_memory,
    is_notebook_state,
    is_pins,
    is_plain_user,
    is_snipped,
)
from nbagent.engine.compaction._common import tokens
from nbagent.engine.compaction._floor import (
    digest,
    kept_floor,
    names_shown,
    parse_floor,
    render_floor,
)
from nbagent.engine.compaction._identifiers import clean, error_lines, names_in_output
from nbagent.engine.compaction._memory import _merge
from nbagent.providers import parse_token_limits
from nbagent.testing import ScriptedSummarizer
from tests.helpers import SYSTEM, nine_sections, session, tool_round

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import fidelity  # noqa: E402

Messages = list[dict[str, Any]]
KNOBS = {"tail_min_tokens": 600, "tail_max_tokens": 1_200, "tail_min_messages": 4}


def python_round(t: int, ask: str, code: str, output: str, answer: str = "Done.") -> Messages:
    call = {"id": f"py-{t}", "type": "function",
            "function": {"name": "python", "arguments": json.dumps({"code": code})}}
    return [{"role": "user", "content": ask},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"py-{t}", "content": output},
            {"role": "assistant", "content": answer}]


def names(messages: Messages) -> set[str]:
    return set(extract_floor(messages).names)


# -- identifiers: general rules, not this session's names --------------------------------

FRAME = """      account_ref  signup_day  plan_tier    mrr
0          A-1001  2021-03-04      basic  29.00
1          A-1002  2021-03-09        pro  99.00"""
INFO = """<class 'pandas.core.frame.DataFrame'>
RangeIndex: 4812 entries, 0 to 4811
 #   Column       Non-Null Count  Dtype
 0   visit_id     4812 non-null   int64
 1   clinic       4790 non-null   object"""
TRACEBACK = """Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/pandas/core/indexes/base.py", line 3805, in get_loc
KeyError: 'dosage_mg'"""

IDENTIFIER_CASES = [
    ("user", "Please open ~/projects/trial/visits.feather and tell me about it.",
     {"~/projects/trial/visits.feather"}),
    ("user", "Why is `dose_schedule` empty? Also check the 'arm' column.", {"dose_schedule", "arm"}),
    ("user", "Compare patientAge with BMIScore and cohort_label.",
     {"patientAge", "BMIScore", "cohort_label"}),
    ("code", "visits = pd.read_parquet('s3/raw/visits.parquet')\nvisits['arm'].value_counts()",
     {"visits", "arm", "s3/raw/visits.parquet"}),
    ("code", "X, y = prep(frame)\nfeatures = frame[['age', 'weight kg']]\nfit_model(X)",
     {"X", "features", "age", "weight kg", "fit_model"}),
    ("code", "summary = visits.groupby(by='clinic').dose.mean()", {"summary", "clinic"}),
    ("code", "trial.df.sort_values('visit_date', ascending=False)", {"trial.df", "visit_date"}),
    ("output", FRAME, {"account_ref", "signup_day", "plan_tier", "mrr"}),
    ("output", INFO, {"visit_id", "clinic"}),
    ("output", "| site | enrolled |\n|---|---|\n| Leeds | 40 |", {"site", "enrolled"}),
    ("output", "site,enrolled,dropout rate\nLeeds,40,0.1", {"site", "enrolled", "dropout rate"}),
    ("output", "Index(['arm', 'dose'], dtype='object')", {"arm", "dose"}),
    ("output", "wrote 412 rows to out/clean/visits_v2.csv", {"out/clean/visits_v2.csv"}),
    ("output", "visit_ts    datetime64[ns, UTC]\nclinic      category\ndose_mg     Float64\n"
     "dtype: object", {"visit_ts", "clinic", "dose_mg"}),  # df.dtypes
    ("output", "            score  weight\nsubject_id               \n17           0.93    71.2",
     {"score", "weight"}),  # the index's name on a line of its own
]


def _found(kind: str, text: str) -> set[str]:
    if kind == "user":
        return names([{"role": "user", "content": text}])
    if kind == "code":
        return names(python_round(0, "go", text, "ok")[1:2])
    return {name for name, _ in clean(names_in_output(text))}


@pytest.mark.parametrize(("kind", "text", "expected"), IDENTIFIER_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(IDENTIFIER_CASES)])
def test_identifiers_are_found_by_general_rules(kind: str, text: str, expected: set[str]) -> None:
    assert expected <= _found(kind, text)


def test_library_internals_options_and_dtypes_are_not_names() -> None:
    found = names(python_round(0, "go", "df = pd.read_csv('a.csv', sep=';', how='left')",
                               TRACEBACK + "\n" + INFO))
    assert not {n for n in found if "site-packages" in n}
    assert not {"left", ";", "int64", "object", "RangeIndex", "KeyError", "pd"} & found


def test_a_table_is_read_line_by_line_whatever_the_line_breaks() -> None:
    table = "region  units\n\x0b\n\n  \t\nnorth   12\nsouth   7"  # blank-ish lines between
    assert {"region", "units"} <= {n for n, _ in clean(names_in_output(table))}


def test_error_lines_are_exception_and_error_lines_only() -> None:
    text = TRACEBACK + "\nERROR: disk quota exceeded\nwarning text\nValueError: bad 'x'"
    assert error_lines(text) == ["KeyError: 'dosage_mg'", "ERROR: disk quota exceeded",
                                 "ValueError: bad 'x'"]


# -- the floor as text: rendered, bounded, read back --------------------------------------


def test_a_floor_reads_back_what_it_wrote_even_multiline_and_unicode() -> None:
    floor = Floor(("Load a.csv\n\n  then plot", "Ünïcode ✓ 数据"), ("a.csv", "Unit Price"),
                  ("KeyError: 'x'",))
    assert parse_floor(render_floor(floor, 1_000)) == floor


def test_the_floor_stays_within_its_budget() -> None:
    users = tuple(f"Question {i}: how does col_{i} relate to the target? More words here."
                  for i in range(200))
    floor = Floor(users, tuple(f"name_{i}" for i in range(300)), tuple(f"E{i}Error: x" for i in
                                                                       range(50)))
    for budget in (200, 800, 3_000):
        text = render_floor(floor, budget, keep_first=True, keep_last=True)
        assert tokens([{"role": "user", "content": text}]) <= budget * 1.1 + 40


def test_over_budget_the_oldest_middle_messages_shorten_and_none_goes_silently() -> None:
    asks = [f"Ask number {i}: please look at the weekly numbers again. Then tell me more."
            for i in range(40)]
    asks[5] = "Looks fine. From now on drop the rows from the old pilot, they do not compare."
    floor = Floor(tuple(asks), (), ())
    kept = parse_floor(render_floor(floor, 500, keep_first=True, keep_last=True)).user_messages
    assert kept[0] == asks[0] and kept[-1] == asks[-1]  # the first and the latest stay whole
    assert any(k.endswith(SHORTENED) for k in kept)  # the oldest middle ones were shortened
    assert any("drop the rows from the old pilot" in k for k in kept)  # the decision outlives
    left_out = [k for k in kept if k.startswith("[") and "left out" in k]
    said = int(left_out[0].split()[0][1:]) if left_out else 0
    shown = sum(any(k.startswith(a[:16]) for k in kept) for a in asks)
    assert shown + said == len(asks)  # every message is shown or counted as left out


def test_floor_budget_is_a_bounded_share_of_the_trigger() -> None:
    assert floor_budget(6_841) == 1_710 and floor_budget(200) == 200
    assert floor_budget(900_000) == 2_000  # a large window needs no larger floor


# -- notes validation (L2) -----------------------------------------------------------------

SEEN = Floor(("Load sales.csv",), ("sales_df", "revenue"), ())


@pytest.mark.parametrize(
    ("notes", "problem"),
    [("", "empty"), ("Error: rate limited", "error"),
     ("Sure! We had a productive conversation about your data.", "name nothing"),
     (nine_sections("The user worked on the analysis"), "name nothing"),
     ("- sales_df loaded; revenue is skewed", None)],
    ids=["empty", "error", "boilerplate", "bland-sections", "names-something"],
)
def test_notes_must_name_something_from_the_transcript(notes: str, problem: str | None) -> None:
    problems = validate_notes(notes, SEEN)
    assert (problem is None and not problems) or (problem and problem in problems[0])


def test_without_names_the_notes_must_use_a_word_the_user_wrote() -> None:
    floor = Floor(("Summarise the interviews about commuting habits",), (), ())
    assert not validate_notes("- interviews: most people commute by bike", floor)
    assert validate_notes("- a productive conversation", floor)


# -- each level keeps its floor --------------------------------------------------------------


def data_session() -> Messages:
    messages: Messages = [SYSTEM]
    messages += python_round(0, "Load data/trial/visits.csv please.",
                             "visits = pd.read_csv('data/trial/visits.csv')\nvisits.head()", FRAME)
    messages += python_round(1, "Average dose?", "visits['dosage_mg'].mean()", TRACEBACK,
                             "The column is dose_mg; dosage_mg raised a KeyError.")
    messages += python_round(2, "Use dose_mg. From now on exclude the pilot clinic.",
                             "visits = visits[visits.clinic != 'pilot']", "(4100, 9)")
    for t in range(3, 12):
        messages += tool_round(t)
    return messages


FLOOR_NAMES = {"data/trial/visits.csv", "visits", "account_ref", "plan_tier", "dosage_mg"}


def test_a_snip_placeholder_carries_a_bounded_digest() -> None:
    snipped = snip_old_tools(data_session(), keep_recent_turns=3, min_chars=50)
    placeholders = [m["content"] for m in snipped if m["role"] == "tool" and is_snipped(m["content"])]
    assert "account_ref" in placeholders[0] and "plan_tier" in placeholders[0]
    assert "KeyError: 'dosage_mg'" in placeholders[1]
    big = FRAME + "\n" + "\n".join(f"col_{i}  " * 40 for i in range(200))
    assert len(digest(big, 400)) <= 400


def test_a_memory_block_carries_the_floor_of_what_it_folds() -> None:
    summarize = ScriptedSummarizer(["- explored visits and fixed the dose column"])
    folded = session_memory_compact(data_session(), summarize, **KNOBS)
    block = folded[1]["content"]
    assert is_memory(folded[1]) and not folded.degraded
    assert FLOOR_NAMES <= set(parse_floor(block).names)
    assert "KeyError: 'dosage_mg'" in block
    assert "- Use dose_mg. From now on exclude the pilot clinic." in block  # verbatim


def test_names_the_notes_show_are_not_listed_again_and_are_read_back() -> None:
    shown = {"data/trial/visits.csv", "account_ref", "dosage_mg"}
    summarize = ScriptedSummarizer(["- loaded `data/trial/visits.csv` (key account_ref); "
                                    "dosage_mg raised a KeyError, so use the dose column."])
    messages = list(session_memory_compact(data_session(), summarize, **KNOBS))
    block = messages[1]["content"]
    listed = set(parse_floor(block).names)
    assert shown.isdisjoint(listed)  # the notes show them: not printed twice
    assert {"plan_tier", "visits"} <= listed  # not in the notes: still listed
    assert FLOOR_NAMES <= set(kept_floor(block).names)  # read back from the notes
    assert "- Use dose_mg. From now on exclude the pilot clinic." in block  # users stay whole
    messages += tool_round(20)  # a later summary that says none of them still keeps them
    summary = full_compact(messages, ScriptedSummarizer([nine_sections("Bland")]))[1]["content"]
    assert FLOOR_NAMES <= set(parse_floor(summary).names)


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


def test_prose_in_the_notes_does_not_crowd_the_names_out_of_a_merge() -> None:
    """Words of prose are not names: a tight merged floor keeps the names of every block."""
    prose = ("We re-ran the follow-up t-test, e.g. the p-value w/o outliers, and/or the "
             "x-axis; non-null counts look fine. ")

    def block(notes: str, names: str) -> dict[str, Any]:
        return {"role": "user", "content": f"{MEMORY_HEADER}\n{notes}\n\nNames: {names}"}

    first, second = block(f"- {prose * 4}sales_df is clean.", "col_1, col_2"), block(
        f"- {prose}Then col_7.", "col_8, col_9")
    merged, calls, _cost, _how = _merge([first, second], ScriptedSummarizer(
        ["- merged: explored sales_df"]), 40, kept_floor(first["content"]))
    assert calls == 1 and "merged: explored sales_df" in merged["content"]
    assert set(kept_floor(merged["content"]).names) == {
        "sales_df", "col_1", "col_2", "col_7", "col_8", "col_9"}


@pytest.mark.parametrize("reply", ["Sure! We had a productive conversation.",
                                   nine_sections("Bland")], ids=["garbage", "bland"])
def test_weak_notes_are_retried_once_then_the_floor_stands_alone(reply: str) -> None:
    summarize = ScriptedSummarizer([reply, reply])
    folded = session_memory_compact(data_session(), summarize, **KNOBS)
    assert folded.changed and folded.degraded and folded.summary_calls == 2
    assert "name nothing" in summarize.last_prompt()  # the retry says what was wrong
    block = folded[1]["content"]
    assert reply not in block and "No notes" in block and FLOOR_NAMES <= set(parse_floor(block).names)


def test_with_no_summarizer_the_memory_is_the_floor_and_no_model_is_called() -> None:
    folded = session_memory_compact(data_session(), None, **KNOBS)
    assert folded.changed and folded.degraded and folded.summary_calls == 0
    assert "Load data/trial/visits.csv please." in folded[1]["content"]


def test_a_raising_summarizer_still_raises_so_the_controller_can_fall_back() -> None:
    with pytest.raises(CompactionFailed):
        session_memory_compact(data_session(), ScriptedSummarizer([RuntimeError("down")]), **KNOBS)


def test_a_summary_after_memory_keeps_the_memory_floor() -> None:
    summarize = ScriptedSummarizer(["- visits explored", nine_sections()])
    messages = list(session_memory_compact(data_session(), summarize, **KNOBS))
    messages += tool_round(20)
    summary = full_compact(messages, summarize)[1]["content"]
    assert "Use dose_mg. From now on exclude the pilot clinic." in summary
    assert "Load data/trial/visits.csv please." in summary
    assert FLOOR_NAMES <= set(parse_floor(summary).names)


def test_dropped_rounds_leave_their_floor_and_still_fit() -> None:
    messages = data_session()
    size = tokens(messages)
    dropped = ptl_fallback(messages, parse_token_limits(f"prompt is too long: {size} tokens > {size // 2} maximum"))
    assert tokens(dropped) <= 0.9 * size // 2
    block = next(m["content"] for m in dropped if is_memory(m))
    assert "Use dose_mg. From now on exclude the pilot clinic." in block


# -- counts: given once, reused --------------------------------------------------------------

_SIZES = Settings(keep_recent_turns=2, memory_tail_min_tokens=KNOBS["tail_min_tokens"],
                  memory_tail_max_tokens=KNOBS["tail_max_tokens"],
                  memory_tail_min_messages=KNOBS["tail_min_messages"], memory_min_fold_tokens=0)
_CONTEXT = LadderContext(_SIZES, thresholds("claude-sonnet-4-5", settings=_SIZES),
                         lambda _: nine_sections(),
                         overflow=(9000, 3000))  # "prompt is too long: 9000 tokens > 3000 maximum"
LEVELS: dict[str, Any] = {  # every row of the ladder, as the controller binds it, and L5
    **{rung.name: rung.bind(_CONTEXT) for rung in LADDER},
    "L5": lambda m, c: context_collapse(m, 100, counts=c),
}


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_given_counts_give_the_same_result_as_estimating(level: str) -> None:
    messages = data_session()
    counts = [tokens([m]) for m in messages]
    assert list(LEVELS[level](messages, counts)) == list(LEVELS[level](messages, None))
    with pytest.raises(ValueError, match="token counts for"):
        LEVELS[level](messages, counts[:-1])


def test_overflow_uses_the_given_counts() -> None:
    messages = session(10)
    error = parse_token_limits("prompt is too long: 12000 tokens > 10000 maximum")  # 20% over
    plain = ptl_fallback(messages, error, keep_floor=False)
    inflated = ptl_fallback(messages, error, keep_floor=False,
                            counts=[1] + [100] * 20 + [1_000] * (len(messages) - 21))
    assert len(inflated) < len(plain)  # the big (counted) recent rounds force a deeper cut


# -- pins and the notebook state ---------------------------------------------------------------


def test_pins_are_one_block_after_the_system_prompt_replaced_not_appended() -> None:
    messages = session(3)
    pinned = with_pins(messages, ["revenue is in EUR", "two\nlines"])
    assert pinned[0] == SYSTEM and is_pins(pinned[1]) and pinned[2:] == messages[1:]
    assert pins_of(pinned) == ["revenue is in EUR", "two\nlines"]
    again = with_pins(pinned, ["only this"])
    assert sum(map(is_pins, again)) == 1 and pins_of(again) == ["only this"]
    assert with_pins(again, []) == messages and messages == session(3)  # input untouched
    assert str(pinned[1]["content"]).startswith(PINS_HEADER)


def test_every_level_keeps_pins_verbatim() -> None:
    messages = with_pins(data_session(), ["never drop the 2019 rows"])
    for level in LEVELS.values():
        assert [m for m in level(messages, None) if is_pins(m)] == [messages[1]]


def test_the_notebook_state_is_one_block_after_the_memory_replaced_wherever_it_was() -> None:
    folded = list(session_memory_compact(data_session(), None, **KNOBS))
    with_state = with_notebook_state(folded, "visits: DataFrame (4100, 9) columns: dose_mg")
    assert is_memory(with_state[1]) and is_notebook_state(with_state[2])
    assert with_state[3:] == folded[2:]
    moved = [*with_state[:2], *with_state[3:5], with_state[2], *with_state[5:]]
    replaced = with_notebook_state(moved, "visits: DataFrame (4000, 9)")
    assert sum(map(is_notebook_state, replaced)) == 1 and is_notebook_state(replaced[2])
    assert notebook_state_of(replaced) == "visits: DataFrame (4000, 9)"
    assert with_notebook_state(replaced, None) == folded
    assert str(with_state[2]["content"]).startswith(STATE_HEADER)


def test_the_notebook_state_never_splits_a_tool_call_from_its_result() -> None:
    pending = session(2)[:3]  # a user ask, a tool call and its result
    placed = with_notebook_state(pending, "x: int")
    validate_messages(placed)
    assert is_notebook_state(placed[1]) and not is_plain_user(placed[1])


def test_compaction_keeps_the_notebook_state_and_puts_it_after_the_memory() -> None:
    messages = with_notebook_state(data_session(), "visits: DataFrame (4100, 9)")
    folded = session_memory_compact(messages, None, **KNOBS)
    assert is_memory(folded[1]) and folded[2] == messages[1]
    summarized = full_compact(messages, lambda _: nine_sections())
    assert summarized[2] == messages[1]
    assert not any("visits: DataFrame" in str(m["content"]) for m in summarized[1:2])


# -- the fidelity targets, on a small generated session ----------------------------------------

SUMMARIZERS = {"garbage": fidelity.garbage, "bland": fidelity.bland,
               "truncating": fidelity.truncating, "raising": fidelity.raising}


def ladder(messages: Messages, summarize: Any, trigger: int) -> Messages:
    """The levels as the controller composes them: L1, then L2 (the floor alone when the
    summarizer fails)."""
    snipped = snip_old_tools(messages, keep_recent_turns=4)
    work = list(snipped) if snipped.changed else messages
    if tokens(work) < trigger:
        return work
    knobs = {**KNOBS, "floor_tokens_budget": floor_budget(trigger)}
    try:
        return list(session_memory_compact(work, summarize, **knobs))
    except CompactionFailed:
        return list(session_memory_compact(work, None, **knobs))


@pytest.mark.parametrize("name", sorted(SUMMARIZERS))
def test_the_levels_meet_the_fidelity_targets_with_any_summarizer(name: str) -> None:
    generated = fidelity.make_session(7, rounds=30)
    trigger = 3_000
    messages: Messages = [fidelity.SYSTEM]
    first = generated.rounds[0].messages[0]["content"]
    for round_ in generated.rounds:
        messages = messages + round_.messages[:1]
        if tokens(messages) >= trigger:
            before = copy.deepcopy(messages)
            messages = ladder(messages, SUMMARIZERS[name], trigger)
            validate_messages(messages)
            assert tokens(messages) < trigger and before != messages
            text = fidelity.visible_text(messages)
            assert first in text and round_.messages[0]["content"] in text
        messages = messages + round_.messages[1:]
    run = fidelity.Run(final=messages, asks_checked=1, first_kept=1, latest_kept=1)
    score = fidelity.score(generated, run)
    assert score.user_messages == 1 and score.decisions == 1
    assert score.identifiers >= 0.95, score.missing


@pytest.mark.parametrize("name", sorted(SUMMARIZERS))
def test_the_controller_meets_the_fidelity_targets(name: str) -> None:
    generated = fidelity.make_session(3, rounds=40)
    run = fidelity.run_controller(generated, SUMMARIZERS[name])
    score = fidelity.score(generated, run)
    assert score.compactions >= 2
    assert score.first_ask == 1 and score.latest_ask == 1
    assert score.user_messages == 1 and score.decisions == 1
    assert score.identifiers >= 0.95, score.missing
    assert score.tokens_after < score.trigger and score.peak_tokens < fidelity.WINDOW
