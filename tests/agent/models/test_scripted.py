"""The fakes that ship in `nbagent.testing` (`_scripted`), held to their own contract: a
`ScriptedModel` replays its steps in order (text streamed word by word, tool calls with
their ids and JSON arguments, the finish reason a real model gives), records a copy of
each request, raises what its script holds and says when it runs dry; a
`ScriptedSummarizer` does the same for summaries; `provider_error` is shaped as a
provider's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nbagent import Usage
from nbagent.agent.models._scripted import OFFLINE_NOTED
from nbagent.compaction import (
    SECTIONS,
    full_compact,
    parse_sections,
    session_memory_compact,
    validate_summary,
)
from nbagent.testing import (
    ScriptedModel,
    ScriptedSummarizer,
    calls,
    offline_analyst,
    provider_error,
    reply,
)
from tests.helpers import SYSTEM, tool_round

ASK = [{"role": "user", "content": "what do I have?"}]


def test_a_script_is_replayed_in_order_streamed_and_recorded_as_a_copy() -> None:
    usage = Usage(input_tokens=12, output_tokens=3)
    model = ScriptedModel([calls(("list_variables", {}), ("describe", '{"name": "df"}')),
                           reply("You have df.", usage=usage, cost=0.5),
                           reply("cut", finish_reason="length")])
    messages: list[dict[str, Any]] = list(ASK)
    first = model.complete(messages, [], on_text=None, tool_choice="auto")
    assert [c["id"] for c in first.message["tool_calls"]] == ["call_1", "call_2"]
    assert [(c["function"]["name"], c["function"]["arguments"])
            for c in first.message["tool_calls"]] == [("list_variables", "{}"),
                                                      ("describe", '{"name": "df"}')]
    assert first.finish_reason == "tool_calls" and first.usage is None
    messages.append({"role": "user", "content": "changed after the call"})
    assert model.requests == [ASK] and model.tool_choices == ["auto"]
    pieces: list[str] = []
    second = model.complete(ASK, [], on_text=pieces.append)
    assert pieces == ["You", " have", " df."] and second.message == {
        "role": "assistant", "content": "You have df."}
    assert (second.usage, second.cost, second.finish_reason) == (usage, 0.5, "stop")
    assert model.complete(ASK, [], on_text=None).finish_reason == "length"
    model.assert_consumed()


def test_an_error_in_the_script_is_raised_and_a_dry_script_says_so() -> None:
    model = ScriptedModel([provider_error(429, "slow down", retry_after=7), "after"])
    with pytest.raises(Exception, match="slow down") as caught:
        model.complete(ASK, [], on_text=None)
    error: Any = caught.value
    assert error.status_code == 429 and error.headers == {"retry-after": "7"}
    with pytest.raises(AssertionError, match="1 scripted steps were never used"):
        model.assert_consumed()
    assert model.complete(ASK, [], on_text=None).message["content"] == "after"
    with pytest.raises(AssertionError, match="ScriptedModel request 3: the script has nothing"):
        model.complete(ASK, [], on_text=None)
    endless = ScriptedModel(default="again")
    assert [endless.complete(ASK, [], on_text=None).message["content"]
            for _ in range(2)] == ["again", "again"]
    assert provider_error(500).headers == {}


def test_the_summarizer_replays_text_or_a_function_and_records_each_request() -> None:
    summarize = ScriptedSummarizer(["## 1. Intent", lambda messages: f"{len(messages)} seen"])
    assert summarize(ASK) == "## 1. Intent"
    assert summarize([*ASK, {"role": "user", "content": "Summarize."}]) == "2 seen"
    assert summarize.calls == 2 and summarize.last_prompt() == "Summarize."
    summarize.assert_consumed()
    with pytest.raises(AssertionError, match="ScriptedSummarizer call 3: the script has"):
        summarize(ASK)
    quiet = ScriptedSummarizer(default="s", record=False)
    assert quiet(ASK) == "s" and quiet.requests == []


def _offline_summarizer() -> Callable[[list[dict[str, Any]]], str]:
    """The offline analyst asked as the agent asks its model for a summary."""
    model = offline_analyst()
    return lambda messages: str(model.complete(messages, [], on_text=None).message["content"])


def _asked(n: int) -> list[dict[str, Any]]:
    return [SYSTEM, *(m for t in range(n) for m in tool_round(t, question=f"What is col_{t}?")),
            {"role": "user", "content": "And the total?"}]


def test_the_offline_analyst_writes_a_valid_summary_its_notes_under_their_titles() -> None:
    compacted = full_compact(_asked(6), _offline_summarizer())
    assert compacted.changed and not compacted.degraded and compacted.summary_calls == 1
    assert compacted.summary is not None and not validate_summary(compacted.summary)
    sections = parse_sections(compacted.summary)
    assert set(OFFLINE_NOTED) <= set(SECTIONS)  # a renamed title fails here, not silently
    assert all("- What is col_5?" in sections[title] for title in OFFLINE_NOTED)
    notes = session_memory_compact(_asked(6), _offline_summarizer(), tail_min_tokens=10,
                                   tail_max_tokens=40, tail_min_messages=1)
    assert notes.changed and not notes.degraded  # the memory's request gets notes, not sections


@pytest.mark.parametrize("at", [9, 1], ids=["appended", "inserted"])
def test_the_offline_analyst_follows_a_changed_section_table(
        monkeypatch: pytest.MonkeyPatch, at: int) -> None:
    """One more section changes the prompt's count in words: the analyst still
    recognises the request and fills its sections by title wherever the new one sits."""
    import nbagent.compaction as public
    from nbagent.engine import compaction
    from nbagent.engine.compaction import _summary

    more = (*SECTIONS[:at], "Data sources", *SECTIONS[at:])
    for module in (_summary, compaction, public):
        monkeypatch.setattr(module, "SECTIONS", more)
    summarize = ScriptedSummarizer(default=_offline_summarizer())
    compacted = full_compact(_asked(6), summarize)
    assert f"Reply with exactly these {_summary.sections_in_words()} sections" in \
        summarize.last_prompt()  # one more than the table has, whatever it has
    assert compacted.changed and not compacted.degraded and compacted.summary_calls == 1
    assert compacted.summary is not None and not validate_summary(compacted.summary)
    sections = parse_sections(compacted.summary)
    assert list(sections) == list(more) and sections["Data sources"] == "None."
    assert all("- What is col_5?" in sections[title] for title in OFFLINE_NOTED)
