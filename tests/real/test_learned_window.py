"""The learned-window path end to end: a server on 127.0.0.1 that states no window refuses
an over-long prompt with OpenAI's real overflow body; the session recovers (L4), learns
the limit, and from then on compacts on the learned window with a summarizer whose notes
are generic — and the first request, every decision and the latest ask stay as they do
when the window is told. Through litellm's real request path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, LiteLLMModel, RetryPolicy, Settings, tool
from nbagent.testing import ScriptedSummarizer
from tests.engine.test_first_request import first_request_of
from tests.openai_stub import StubServer

pytestmark = pytest.mark.real

LIMIT = 3_000  # the server's real window (its own count: characters / 4)
FIRST = ("We are building a churn model for the retention team; these are the ground rules. "
         "The raw data is in data/raw/churn_2024.csv and we use median imputation for the "
         "numeric gaps. Keep the customers from the pilot out of everything, they were "
         "hand-picked. Report every metric on the 2024 holdout only and never tune on it. "
         "Start with gradient boosting at default settings and explain each step briefly.")
DECISIONS = {4: "From now on cap monthly_fee at its 99th percentile.",
             9: "Exclude anything recorded before 2022-03-01; the logger was miscalibrated.",
             15: "Use tenure_months in every model from now on."}


def openai_body(requested: int, limit: int) -> dict[str, Any]:
    """OpenAI's real overflow body (tests/data/overflow_errors.json), with these numbers."""
    cases = json.loads((Path(__file__).parents[1] / "data" / "overflow_errors.json")
                       .read_text(encoding="utf-8"))
    real = next(c for c in cases if c["provider"] == "openai" and c["text"].startswith("{"))
    text = real["text"].replace(str(real["limits"][1]), str(limit)).replace(
        str(real["limits"][0]), str(requested))
    return dict(json.loads(text))


class OpenAIShaped(StubServer):
    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, payload = super().answer(body)
        if status == 400:
            prompt = int(payload["error"]["message"].split("you requested ")[1].split()[0])
            return 400, openai_body(prompt, self.context)
        return status, payload


@tool
def peek(note: str = "") -> str:
    """Look at the data."""
    return ("churn_df: 4,812 rows; columns customer_id, tenure_months, monthly_fee, "
            "support_calls, plan, churned. " + "monthly_fee quantiles 12.5 19.9 29.9 " * 12)


@pytest.fixture
def server() -> Iterator[OpenAIShaped]:
    with OpenAIShaped(context=LIMIT) as stub:
        yield stub


def test_after_a_learned_window_the_first_request_and_decisions_stay(
        server: OpenAIShaped) -> None:
    model = LiteLLMModel("openai/own-model", api_base=server.base_url, api_key="sk-test-not-real")
    agent = Agent(model=model, tools=[peek], builtin_tools=False, namespace={},
                  settings=Settings(), retry=RetryPolicy(sleep=lambda s: None), archive=False,
                  summarize=ScriptedSummarizer(default="- The user and the assistant looked "
                                               "at the data and made some progress."))
    assert agent.window().raw_window > LIMIT  # nothing told it the server's window
    problems: list[str] = []
    learned_at = None
    for turn in range(24):
        ask = FIRST if turn == 0 else DECISIONS.get(turn, f"Turn {turn}: what about plan?")
        result = agent.chat(ask)
        assert result.text.startswith("I see:")
        if learned_at is None and agent.window().source.startswith("learned"):
            learned_at = turn
        text = json.dumps(agent.history.messages)
        if first_request_of(agent.history.messages) != FIRST:
            problems.append(f"turn {turn}: the first request is not first and whole")
        problems += [f"turn {turn}: lost {d!r}" for t, d in DECISIONS.items()
                     if t <= turn and json.dumps(d)[1:-1] not in text]
        if json.dumps(ask)[1:-1] not in text:
            problems.append(f"turn {turn}: the latest ask is gone")
    assert learned_at is not None and agent.window().raw_window == LIMIT
    compactions = [d for d in agent.controller.decisions if d.action == "compacted"]
    assert len(compactions) >= 4 and any(d.trigger == "overflow" for d in compactions)
    assert any(d.trigger != "overflow" for d in compactions if d.levels != ["L1 snip"])
    assert problems == []
