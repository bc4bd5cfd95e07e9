"""What a session was billed (`_billing`): each kind of token, the cost and the share read
from the provider's cache, and every request of a chat joining the session's billing."""

from __future__ import annotations

import pytest

from nbagent import Billing, Usage
from nbagent.testing import ScriptedModel, calls, reply
from tests.helpers import add, make_agent


def test_billing_counts_each_kind_of_token_and_the_cache_read_share() -> None:
    billing = Billing()
    billing.add(Usage(input_tokens=100, output_tokens=10, cache_write_tokens=900),
                cost=0.0039, input_cost=0.00367)
    billing.add(Usage(input_tokens=50, output_tokens=20, cache_read_tokens=950),
                cost=0.0006, input_cost=0.0003)
    assert (billing.requests, billing.prompt_tokens, billing.output_tokens) == (2, 2_000, 30)
    assert billing.cache_read_share == pytest.approx(950 / 2_000)
    assert billing.cost == pytest.approx(0.0045) and billing.input_cost == pytest.approx(0.00397)
    billing.add(None, cost=0.001)  # a reply without usage: its cost still counts
    assert billing.requests == 3 and billing.input_cost == pytest.approx(0.00497)
    assert Billing().cache_read_share == 0.0


def test_each_chat_request_joins_the_sessions_billing() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), reply("3")])
    agent, _ = make_agent(model, tools=[add])
    result = agent.chat("add")
    assert agent.billing().requests == 2 and result.replaced is False
