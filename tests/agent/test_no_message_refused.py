"""No message is refused while room can be made (issue 42): at 2,048- and 4,096-token windows
a data-science session of 1–3 KB pastes goes 300 turns with the scripted model, every turn
sent — compaction folds all but the latest round when it must (L4 room), the tool schemas
shrink to their share of the window — and the first request and the latest ask are in every
request. A message is refused only when the system prompt, the tools and it cannot fit
together (tests/agent/test_window_stops.py). The same through litellm's real request path
to servers that refuse, cut or under-report: tests/real/test_wrong_window.py."""

from __future__ import annotations

import pytest

from nbagent import Agent, RetryPolicy, Settings
from nbagent.engine import count_tools_tokens
from nbagent.testing import ScriptedModel, ScriptedSummarizer, reply
from tests.helpers import pasted_asks

FIRST = "Turn 0: here is what I got"


@pytest.mark.parametrize("window", [2_048, 4_096])
def test_three_hundred_turns_of_pastes_are_all_sent(window: int) -> None:
    model = ScriptedModel(default=reply("North leads on revenue; unit_price is flat."))
    agent = Agent(model=model, namespace={}, archive=False,
                  settings=Settings(max_context_tokens=window, notebook_context=False),
                  retry=RetryPolicy(sleep=lambda s: None),
                  summarize=ScriptedSummarizer(default="- the user pasted revenue tables"))
    asks = pasted_asks(300)
    results = [agent.chat(ask) for ask in asks]
    assert [r.stop_reason for r in results if r.stop_reason != "done"] == []
    assert len(model.requests) == 300
    limits = agent.context_state().thresholds
    for ask, request, tools in zip(asks, model.requests, model.tools_seen, strict=True):
        assert request[-1] == {"role": "user", "content": ask}  # the latest ask, whole
        assert FIRST in str(request[1:])  # the first request's opening, every time
        assert count_tools_tokens(tools) <= 0.15 * limits.effective_window
    decisions = list(agent.controller.decisions)
    assert any("L4 room" in d.levels for d in decisions) or window > 2_048
    assert not any(d.action == "failed" for d in decisions)
