"""A model's reply repaired before it enters the history (`_reply`): duplicate call ids, a
call without a name, arguments nested past any parser or not a string — repaired, never
raised, and the history stays valid."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import tool, validate_messages
from nbagent.testing import ScriptedModel, reply
from tests import helpers
from tests.helpers import make_agent, tool_results

add = tool(helpers.add)


@pytest.mark.parametrize("raw", [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "same", "type": "function", "function": {"name": "add", "arguments": '{"a":1,"b":1}'}},
        {"id": "same", "type": "function", "function": {"name": "add", "arguments": '{"a":2,"b":2}'}},
    ]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": None, "arguments": "{}"}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add",
                                                      "arguments": "[" * 50_000 + "]" * 50_000}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 1}}}]},
], ids=["duplicate-ids", "name-none", "deep-json", "arguments-not-a-string"])
def test_malformed_model_output_is_repaired_never_raised(raw: dict[str, Any]) -> None:
    from nbagent.testing import Step

    model = ScriptedModel([Step(raw_message=raw), reply("recovered")])
    agent, _ = make_agent(model, tools=[add])
    assert agent.chat("go").text == "recovered"
    validate_messages(agent.history.messages)
    ids = [c["id"] for m in agent.history if m["role"] == "assistant"
           for c in m.get("tool_calls") or ()]
    assert len(ids) == len(set(ids)) and all(tool_results(agent))
