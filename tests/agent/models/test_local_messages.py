"""`adapt_messages` (`_local_messages`): a conversation as llama.cpp's chat templates can
render it — a tool result reaches the model as a user message naming the tool."""

from __future__ import annotations

from nbagent.local import adapt_messages

CALL = {"id": "c1", "type": "function", "function": {"name": "show_rows", "arguments": "{}"}}


def test_tool_results_reach_the_model_through_its_chat_template() -> None:
    adapted = adapt_messages([{"role": "user", "content": "rows?"},
                              {"role": "assistant", "content": None, "tool_calls": [CALL]},
                              {"role": "tool", "tool_call_id": "c1", "content": "region month"}])
    assert adapted[1]["content"] == "" and adapted[2] == {
        "role": "user", "content": "Result of show_rows:\nregion month"}
