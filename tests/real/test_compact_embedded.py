"""A manual compaction on the embedded model (SmolLM2-135M on its real llama.cpp server, a
2,048-token window) costs at most one summarizer call, its output bounded (`SUMMARY_TOKENS`);
one that would free too little makes none (the deterministic floor, or nothing). What
the model states of a summary's cost decides it (`SummaryCost`), not its name."""

from __future__ import annotations

import pytest

from nbagent import Agent
from nbagent.demo import FOCUS, QUESTIONS, SYSTEM, sales_tools
from nbagent.engine import MEMORY_HEADER
from nbagent.engine.compaction._floor import notes_end
from nbagent.local import SUMMARY_TOKENS

pytestmark = [pytest.mark.real, pytest.mark.llama]
TURNS = [  # what a few earlier turns on the sales table left in the history
    ("Which region had the highest revenue in March?",
     "North had the highest revenue in March: 1,510.0 from 151 units in the region column."),
    ("And the lowest month overall?",
     "February in the west: revenue 1,010.0 and units_sold 88, the lowest of the table."),
    ("Compare north and south.",
     "North sold 120 and 151 units (revenue 1,200.5 and 1,510.0); south sold 95 and 110 "
     "(980.0 and 1,105.75). North grows, south is flat."),
]


def test_a_manual_compaction_makes_at_most_one_bounded_summarizer_call() -> None:
    agent = Agent(model="local", system=SYSTEM, tools=sales_tools(), builtin_tools=False,
                  namespace={}, settings={"local_n_ctx": 2048})
    question, tool_name = QUESTIONS[0]
    agent.chat(question, tool_choice=tool_name)  # the real server answers
    model = agent.model.running
    assert model is not None and agent.model.max_output is not None

    # a short conversation: folding it would free too little for a call on this model
    small = agent.compact(FOCUS)
    assert small.summary_calls == 0
    assert "not worth a summarizer call" in small.reason

    for _ in range(6):  # a conversation long enough that folding it is worth one call
        for asked, answered in TURNS:
            agent.session.add({"role": "user", "content": asked})
            agent.session.add({"role": "assistant", "content": answered})
    before = agent.context_state().tokens
    assert before > 0.6 * 2048
    decision = agent.compact(FOCUS)
    assert decision.summary_calls == 1, decision.reason  # no retry, no merge call
    assert decision.action == "compacted" and decision.tokens_after < before
    assert decision.levels[-1] == "L2 memory" and decision.summary is not None
    notes = decision.summary[len(MEMORY_HEADER):notes_end(decision.summary)]
    assert 0 < model.count_text()(notes.strip()) <= SUMMARY_TOKENS  # bounded output
