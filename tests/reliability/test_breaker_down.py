"""Issue 13's promise with the summarizer down for good: 300 turns stay inside the window
(L1, the floor and L4, no model call), the provider never rejects a request, and the user
is told the breaker is open — distinctly from "auto-compact off"."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import Agent, Settings, estimate_message_tokens, tool
from nbagent.testing import ScriptedModel, ScriptedSummarizer, Step, calls, provider_error, reply

WINDOW = 8_192


@pytest.mark.slow
def test_three_hundred_turns_with_a_summarizer_that_always_raises() -> None:
    @tool
    def measure(step: int) -> str:
        """Measure one step of the experiment."""
        return "\n".join(f"step {step} sensor_{i}: " + "4.25 " * 10 for i in range(30))

    sizes: list[int] = []

    def provider(messages: list[dict[str, Any]]) -> Step:
        size = sum(estimate_message_tokens(m) for m in messages)
        sizes.append(size)
        if size > WINDOW:  # what a real provider does with a prompt over its window
            raise provider_error(400, f"This model's maximum context length is {WINDOW} "
                                      f"tokens. However, you requested {size} tokens.")
        if messages[-1]["role"] == "user":
            return calls(("measure", {"step": len(messages)}))
        return reply("The readings look stable around 4.25.")

    agent = Agent(model=ScriptedModel(default=provider, record=False), tools=[measure],
                  builtin_tools=False, namespace={}, archive=False,
                  settings=Settings(max_context_tokens=WINDOW),
                  summarize=ScriptedSummarizer(default=RuntimeError("summarizer down"),
                                               record=False))
    for turn in range(300):
        result = agent.chat(f"Turn {turn}: measure the next step of experiment_7.")
        assert result.stop_reason == "done", (turn, result.stop_message)
    assert max(sizes) <= WINDOW  # no request was ever too long for the provider
    state = agent.context_state()
    assert agent.controller.breaker_open and state.breaker_open
    assert "breaker open" in (state.compaction_note or "")
    assert "NBAGENT_DISABLE_COMPACT" not in (state.compaction_note or "")
