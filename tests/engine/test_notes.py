"""Notebook notes: the kernel's variables, appended to the conversation when they changed
(the agent does it for models reached through litellm). A note is never the user's
message, L1 clears the ones a later note supersedes, and no summary or floor carries it."""

from __future__ import annotations

from typing import Any

from nbagent.engine import NOTE_CLEARED, is_cleared, is_note, is_plain_user, view_change
from nbagent.engine.compaction import notebook_note, snip_old_tools
from tests.engine.compaction.sessions import turn

Messages = list[dict[str, Any]]


def test_a_note_is_written_only_when_the_variables_changed() -> None:
    history: Messages = [{"role": "system", "content": "s"}]
    first = notebook_note(history, "df: DataFrame shape (3, 2)")
    assert first is not None and is_note(first) and not is_plain_user(first)
    history.append(first)
    assert notebook_note(history, "df: DataFrame shape (3, 2)") is None  # unchanged
    assert notebook_note(history, "  ") is None and notebook_note(history, None) is None
    changed = notebook_note(history, "df: DataFrame shape (4, 2)")
    assert changed is not None and "(4, 2)" in changed["content"]
    history[-1] = {**first, "content": NOTE_CLEARED}  # a cleared note holds no state
    assert notebook_note(history, "df: DataFrame shape (3, 2)") is not None


def test_l1_clears_superseded_notes_and_keeps_the_latest() -> None:
    history = [{"role": "system", "content": "s"}]
    for n in range(6):
        history += turn(n, f"model_{n}: list = [{', '.join(['1'] * 200)}]")
    result = snip_old_tools(history, keep_recent_turns=2)
    assert result.changed and "superseded notebook notes" in result.reason
    notes = [m for m in result if is_note(m)]
    assert [m["content"] == NOTE_CLEARED for m in notes] == [True] * 4 + [False] * 2
    assert all(is_cleared(m) for m in notes[:4])
    everything = snip_old_tools(history, keep_recent_turns=0)
    assert [m["content"] == NOTE_CLEARED for m in everything if is_note(m)] == [True] * 5 + [
        False]  # the latest note is the live state: it stays
    assert snip_old_tools(list(everything), keep_recent_turns=0).changed is False  # idempotent


def test_no_summarizer_is_shown_a_note() -> None:
    """The memory and the summary say what happened; the kernel's state then is stale by
    the time they are read (the live one comes as a new note)."""
    from nbagent.engine.compaction import full_compact, is_summary_request, session_memory_compact
    from tests.helpers import nine_sections

    history = [{"role": "system", "content": "s"}]
    for n in range(8):
        history += turn(n, f"model_{n}: int = {n}")
    seen: list[str] = []

    def summarize(messages: Messages) -> str:
        seen.append(str(messages))
        return nine_sections("brief") if is_summary_request(messages) else "- notes"

    assert full_compact(history, summarize).changed
    assert session_memory_compact(history, summarize, tail_min_tokens=10,
                                  tail_max_tokens=40, tail_min_messages=1).changed
    assert len(seen) >= 2 and not any("notebook note" in text for text in seen)


def test_the_preview_and_the_view_count_superseded_notes() -> None:
    history = [{"role": "system", "content": "s"}]
    for n in range(6):
        history += turn(n, f"model_{n}: list = [{', '.join(['1'] * 200)}]")
    change = view_change(history, list(snip_old_tools(history, keep_recent_turns=2)))
    assert change.cleared_notes == 4 and change.cleared_outputs == 0
    assert change.tokens_removed > 0
