"""What an agent reads and does on its current session (`_agent_session`): pins kept verbatim
through every compaction, asked for by the user's `compact`, and taken back by `unpin`."""

from __future__ import annotations

from nbagent.testing import ScriptedModel, reply
from tests.helpers import make_agent


def test_pins_survive_every_compaction_verbatim() -> None:
    from nbagent.testing import ScriptedSummarizer

    agent, _ = make_agent(ScriptedModel(default=reply("a long analysis of it " * 60)),
                          window=4_096, summarize=ScriptedSummarizer(default="- notes"))
    agent.pin("the target column is churn_30d; never use rows before 2021-03")
    for t in range(12):
        agent.chat(f"question {t} about the churn model " * 20)
    assert any(d.action == "compacted" for d in agent.controller.decisions)
    agent.compact("keep the metrics")
    text = "\n".join(str(m.get("content")) for m in agent.history)
    assert "the target column is churn_30d; never use rows before 2021-03" in text
    assert agent.unpin(0) == [] and "churn_30d; never" not in str(agent.history.messages)
