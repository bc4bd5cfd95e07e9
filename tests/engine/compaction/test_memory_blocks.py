"""A memory block's notes are usable only when they name something from the transcript
(or, with no names, a word the user wrote); merging blocks keeps every block's names."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.compaction import (
    Floor,
    validate_notes,
)
from nbagent.engine import MEMORY_HEADER
from nbagent.engine.compaction._memory_blocks import merge_blocks
from nbagent.testing import ScriptedSummarizer, kept_floor
from tests.helpers import nine_sections

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


def test_prose_in_the_notes_does_not_crowd_the_names_out_of_a_merge() -> None:
    """Words of prose are not names: a tight merged floor keeps the names of every block."""
    prose = ("We re-ran the follow-up t-test, e.g. the p-value w/o outliers, and/or the "
             "x-axis; non-null counts look fine. ")

    def block(notes: str, names: str) -> dict[str, Any]:
        return {"role": "user", "content": f"{MEMORY_HEADER}\n{notes}\n\nNames: {names}"}

    first, second = block(f"- {prose * 4}sales_df is clean.", "col_1, col_2"), block(
        f"- {prose}Then col_7.", "col_8, col_9")
    merged, calls, _cost, _how = merge_blocks([first, second], ScriptedSummarizer(
        ["- merged: explored sales_df"]), 40, kept_floor(first["content"]))
    assert calls == 1 and "merged: explored sales_df" in merged["content"]
    assert set(kept_floor(merged["content"]).names) == {
        "sales_df", "col_1", "col_2", "col_7", "col_8", "col_9"}
