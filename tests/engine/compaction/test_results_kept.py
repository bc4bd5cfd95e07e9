"""The floor keeps the results that matter: a figure a run printed and the assistant then
reported is a computed result, kept before the exploration answers that follow it (through
renders, read backs and the memory level); "x; y" sentences keep their subject; the same
subject reported again with the same figures is kept once; the results stay in their share."""

from __future__ import annotations

import json
import random
from typing import Any

from nbagent.compaction import extract_floor, session_memory_compact
from nbagent.engine import NOTE_HEADER, estimate_tokens, is_memory
from nbagent.engine.compaction import floor_budget
from nbagent.engine.compaction._floor_render import RESULTS_SHARE, render_floor
from nbagent.engine.compaction._results import results_in
from nbagent.engine.compaction._results_kept import COMPUTED, collapse
from nbagent.testing import ScriptedSummarizer, parse_floor
from tests.helpers import SYSTEM

Message = dict[str, Any]
TRIGGER = 6_841  # an 8,192-token window's auto-compact trigger
MEAN = "the mean unit_price over merged is 126.41."
COLUMNS = ("unit_price", "quantity", "discount", "region", "order_total")


def turn(t: int, ask: str, code: str, output: str, answer: str) -> list[Message]:
    """A user ask, the assistant's run of `code`, what it printed, the assistant's answer."""
    call = f"call_{t}"
    return [
        {"role": "user", "content": ask},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": call, "type": "function",
            "function": {"name": "run_code", "arguments": json.dumps({"code": code})}}]},
        {"role": "tool", "tool_call_id": call, "content": output},
        {"role": "assistant", "content": answer},
    ]


def computed_mean(t: int = 0) -> list[Message]:
    return turn(t, "What is the mean unit_price over all of merged? Compute it.",
                "print(round(float(merged['unit_price'].mean()), 2))",
                "printed (7 characters):\n126.41", f"Computed: {MEAN}")


def explorations(rounds: int, start: int = 1, seed: int = 7) -> list[Message]:
    """Exploration answers: a table of a column's values, then a share of rows."""
    rng = random.Random(seed)
    messages: list[Message] = []
    for t in range(start, start + rounds):
        column = rng.choice(COLUMNS)
        table = "\n".join(f"{rng.randint(1, 99_999):<10}{rng.uniform(0, 500):.2f}"
                          for _ in range(30))
        messages += turn(t, f"Show value counts for {column} (last {rng.choice([7, 30])} days).",
                         f"merged['{column}'].value_counts().head(30)", table,
                         f"{column} is skewed; the top value covers {rng.randint(5, 40)}% of "
                         "rows.")
    return messages


def results_kept(floor_text: str) -> str:
    return "\n".join(parse_floor(floor_text).results)


def test_a_result_is_not_cut_from_its_subject_at_a_semicolon() -> None:
    text = "unit_price is skewed; the top value covers 28% of rows. I can plot it next."
    assert results_in(text) == ["unit_price is skewed; the top value covers 28% of rows."]
    floor = extract_floor([*turn(1, "Value counts of unit_price?", "vc()", "a table", text)])
    assert any("unit_price" in r and "28%" in r for r in floor.results)


def test_a_figure_a_run_printed_and_the_reply_reported_is_marked_computed() -> None:
    floor = extract_floor([SYSTEM, *computed_mean()])
    assert floor.results == (f"{COMPUTED}Computed: {MEAN}",)


def test_what_makes_a_result_computed() -> None:
    rounded = turn(1, "Mean?", "m()", "printed:\n126.4138", "The mean unit_price is 126.41.")
    fraction = turn(2, "Churn?", "c()", "0.2843", "Churn among premium users is 28.4% now.")
    small = turn(3, "Top?", "t()", "28 12 7", "The top value covers 28% of unit_price rows.")
    elsewhere = turn(4, "Mean?", "m()", "KeyError: 'unit_pric'", "The mean unit_price is 45.23.")
    later = [{"role": "user", "content": "And again?"},
             {"role": "assistant", "content": "As I said, the mean unit_price is 126.4138."}]
    results = extract_floor([SYSTEM, *rounded, *fraction, *small, *elsewhere, *later]).results
    assert [r.startswith(COMPUTED) for r in results] == [True, True, False, False, False]


def test_a_figure_the_kernel_note_showed_is_computed_too() -> None:
    note = {"role": "user", "content": f"{NOTE_HEADER}\nmerged: DataFrame (4812, 12)"}
    floor = extract_floor([SYSTEM, note, {"role": "user", "content": "How many rows now?"},
                           {"role": "assistant", "content": "merged has 4,812 rows now."}])
    assert floor.results == (f"{COMPUTED}merged has 4,812 rows now.",)


def test_a_computed_mean_reported_early_survives_a_hundred_exploration_answers() -> None:
    messages = [SYSTEM, *computed_mean(), *explorations(100)]
    text = render_floor(extract_floor(messages), floor_budget(TRIGGER))
    assert MEAN in results_kept(text)
    # and when it was kept by an earlier compaction, read back with the later answers
    early = render_floor(extract_floor([SYSTEM, *computed_mean(), *explorations(20)]),
                         floor_budget(TRIGGER))
    again = parse_floor(early) + extract_floor(explorations(100, start=21, seed=8))
    assert MEAN in results_kept(render_floor(again, floor_budget(TRIGGER)))


def test_the_memory_level_keeps_the_computed_mean_through_later_folds() -> None:
    summarize = ScriptedSummarizer(default="- explored the columns of merged")
    knobs: dict[str, Any] = {"tail_min_tokens": 600, "tail_max_tokens": 1_200,
                             "tail_min_messages": 4, "memory_max_tokens": 120,
                             "floor_tokens_budget": floor_budget(TRIGGER)}
    messages = list(session_memory_compact([SYSTEM, *explorations(10, start=100)],
                                           summarize, **knobs))  # the first block
    messages += [*computed_mean(), *explorations(10)]
    for block in range(10):  # later blocks, merged when the memory outgrows its budget
        messages += explorations(10, start=11 + 10 * block, seed=block)
        messages = list(session_memory_compact(messages, summarize, **knobs))
    memory = "\n".join(str(m["content"]) for m in messages if is_memory(m))
    assert MEAN in memory


def test_the_same_subject_with_the_same_figures_is_kept_once() -> None:
    assert collapse(["The mean is 126.41.", MEAN, MEAN.capitalize()]) == [MEAN.capitalize()]
    assert collapse([MEAN, "the mean quantity over merged is 126.41."]) == [
        MEAN, "the mean quantity over merged is 126.41."]  # another subject
    assert collapse([MEAN, "the mean unit_price over merged is 98.20."]) == [
        MEAN, "the mean unit_price over merged is 98.20."]  # another figure
    assert collapse(["col_1 has mean 3.5.", "col_2 has mean 3.5."]) == [
        "col_1 has mean 3.5.", "col_2 has mean 3.5."]  # names that differ by a digit
    assert collapse([f"{COMPUTED}The mean is 126.41.", MEAN]) == [f"{COMPUTED}{MEAN}"]
    replies = [{"role": "assistant", "content": f"Region r_{i} holds {i}.5% of the orders."}
               for i in range(12)]
    rng = random.Random(3)
    extras = ["again", "as", "before", "noted", "still", "earlier", "checked", "here"]
    for _ in range(40):  # said over and over, with more or fewer words around it
        said = " ".join(rng.sample(extras, rng.randint(1, len(extras) - 1)))
        replies.append({"role": "assistant", "content": f"{said.capitalize()}: {MEAN}"})
    replies.append({"role": "assistant", "content": f"{' '.join(extras).capitalize()}: {MEAN}"})
    kept = parse_floor(render_floor(extract_floor(replies), 2_000)).results
    assert [r for r in kept if "126.41" in r] == [f"{' '.join(extras).capitalize()}: {MEAN}"]
    assert all(f"Region r_{i} holds {i}.5%" in "\n".join(kept) for i in range(12))


def test_computed_results_stay_in_their_share() -> None:
    messages: list[Message] = [SYSTEM]
    for t in range(200):
        value = f"{100 + t}.{t % 90 + 10}"
        messages += turn(t, f"Mean of col_{t}?", "m()", value,
                         f"The mean of col_{t} is {value}.")
    floor = extract_floor(messages)
    assert len(floor.results) == 60 and all(r.startswith(COMPUTED) for r in floor.results)
    budget = floor_budget(TRIGGER)
    kept = parse_floor(render_floor(floor, budget)).results
    assert 0 < len(kept) < 60 and kept[-1] == f"{COMPUTED}The mean of col_199 is 299.29."
    assert sum(estimate_tokens(r) + 2 for r in kept) <= budget * RESULTS_SHARE
