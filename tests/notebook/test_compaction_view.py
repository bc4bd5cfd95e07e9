"""Compaction you can see: `%compact` shows its progress while it runs (one line, updated in
place, cleared when done), `--preview` prints what a compaction would do, every
compaction says what left the model's view and how to get it back, and an undone one is
marked so in `--show`, the meter and `%context`."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import (
    ChatDisplay,
    MeterLine,
    decision_words,
    notebook_words,
    show_decision,
)

from nbagent import Agent, Decision
from nbagent.events import Compacted, Status
from nbagent.testing import ScriptedModel, ScriptedSummarizer, reply
from tests.helpers import nine_sections
from tests.notebook.helpers import plain, session, shown

LEFT = ("folded turns 1–4 (1,200 tokens) and cleared 2 tool outputs; recall() finds them, "
        "agent.undo_compaction() puts them back")
LEFT_SHOWN = ("folded turns 1–4 (1,200 tokens) and cleared 2 tool outputs; recall() finds "
              "them, %compact --undo puts them back")


def decision(**fields: Any) -> Decision:
    base: dict[str, Any] = dict(action="compacted", trigger="manual", levels=["L2 memory"],
                                reason="", tokens_before=1_972, tokens_after=1_463,
                                threshold=6_841, changed=True, summary_calls=1)
    made = Decision(**base)
    return made.model_copy(update=fields)  # (left_view and undone, where not yet fields)


def long_session(ip: InteractiveShell, summarize: ScriptedSummarizer | None = None,
                 **options: Any) -> Agent:
    agent = session(ScriptedModel(default=reply("a long analysis of the data " * 40)),
                    summarize, **options)
    with capture_output():
        for turn in range(3):
            ip.run_line_magic("chat", f"question {turn} " * 40)
    return agent


class WatchedSummarizer(ScriptedSummarizer):
    """Says what the cell shows while the summary is being written."""

    def __init__(self, captured: list[Any], agent: list[Agent]) -> None:
        super().__init__(default=nine_sections())
        self.captured, self.agent, self.seen = captured, agent, []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.agent[0].events.emit(Status("summarizing turns 1–6 (1,900 tokens)…"))
        self.seen.append(plain(self.captured[0]))
        return super().__call__(*args, **kwargs)


def test_percent_compact_shows_its_progress_and_clears_it(ip: InteractiveShell) -> None:
    captured_now: list[Any] = []
    agent_now: list[Agent] = []
    summarize = WatchedSummarizer(captured_now, agent_now)
    agent_now.append(long_session(ip, summarize))
    with capture_output() as captured:
        captured_now.append(captured)
        ip.run_line_magic("compact", "keep the column names")
    assert summarize.seen and summarize.seen[0] == ["summarizing turns 1–6 (1,900 tokens)…"]
    lines = plain(captured)
    assert not any("summarizing" in line or line == "compacting…" for line in lines)  # cleared
    assert lines[0].startswith("compacted (L")


class PreviewAgent(Agent):
    def preview_compaction(self, focus: str | None = None) -> Any:
        history = len(self.history)

        class Preview:
            def text(self) -> str:
                return (f"would fold {history} messages, keep the floor (focus: {focus}); "
                        "expected 900 tokens after")

        return Preview()


def test_preview_prints_the_libraries_preview_and_changes_nothing(ip: InteractiveShell) -> None:
    summarize = ScriptedSummarizer(default=nine_sections())
    agent = long_session(ip, summarize, kind=PreviewAgent)
    before = agent.history.messages
    with capture_output() as captured:
        ip.run_line_magic("compact", "--preview keep the -m flag")
    assert plain(captured) == [
        "would fold 7 messages, keep the floor (focus: keep the -m flag); expected 900 "
        "tokens after"]
    assert agent.history.messages == before and summarize.requests == []


def test_preview_of_the_library_when_it_has_one(ip: InteractiveShell) -> None:
    agent = long_session(ip)
    if not callable(getattr(agent, "preview_compaction", None)):
        pytest.skip("Agent.preview_compaction is not in this library version yet")
    before = agent.history.messages
    with capture_output() as captured:
        ip.run_line_magic("compact", "--preview keep the city names")
    assert plain(captured) == [notebook_words(agent.preview_compaction("keep the city names")
                                              .text())]
    assert agent.history.messages == before


def test_what_left_the_view_is_said_in_the_chat_cell_and_in_show() -> None:
    made = decision(left_view=LEFT)
    view = ChatDisplay()
    with capture_output() as chat:
        view(Compacted(made))
    assert plain(chat) == [
        "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call\n" + LEFT_SHOWN]
    with capture_output() as listed:
        show_decision(made)
    assert plain(listed) == plain(chat)
    assert 'class="nbagent-left-view"' in shown(listed)[0]["text/html"]


def test_a_real_compaction_says_what_left_the_view(ip: InteractiveShell) -> None:
    agent = long_session(ip)
    with capture_output() as captured:
        ip.run_line_magic("compact", "")
    last = agent.controller.decisions[-1]
    if getattr(last, "left_view", None) is None:
        pytest.skip("Decision.left_view is not filled by this library version yet")
    words, left = plain(captured)[0].splitlines()
    assert words.startswith("compacted (L") and left == notebook_words(last.left_view)
    assert "%compact --undo" in left and "agent.undo_compaction()" not in left
    with capture_output() as listed:
        ip.run_line_magic("compact", "--show")
    assert plain(listed)[-1] == plain(captured)[0]


def test_an_undone_compaction_is_marked_everywhere(ip: InteractiveShell) -> None:
    made = decision(undone=True, left_view=LEFT)
    assert decision_words(made).endswith("— undone")
    with capture_output() as listed:
        show_decision(made)
    assert plain(listed) == [decision_words(made)]  # nothing left the view any more


def test_undo_through_the_shell_marks_show_the_meter_and_context(ip: InteractiveShell) -> None:
    agent = long_session(ip)
    with capture_output():
        ip.run_line_magic("compact", "")
        ip.run_line_magic("compact", "--undo")
    if not getattr(agent.controller.decisions[-1], "undone", False):
        pytest.skip("the controller does not mark an undone decision in this version yet")
    with capture_output() as listed:
        ip.run_line_magic("compact", "--show")
    assert plain(listed)[-1].splitlines()[0].endswith("— undone")
    reading = MeterLine.follow(agent).reading
    assert reading is not None and reading.last_compaction.endswith("(undone)")
    with capture_output() as context:
        ip.run_line_magic("context", "")
    assert "— undone" in plain(context)[0]
