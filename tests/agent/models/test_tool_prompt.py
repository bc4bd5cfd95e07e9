"""How the embedded model's prompt shows tools and calls (`_tool_prompt`): a tool offered
lean (its description's first paragraph, its arguments' types, optional ones marked), a
call of the history written as the model writes one, and a tool's result as a user
message — the text both the chat handler renders and the agent counts."""

from __future__ import annotations

from nbagent.agent.models._tool_prompt import CALL, chat_messages, lean_tool
from tests.agent.models.helpers import SHOW_ROWS


def test_tools_are_offered_lean_and_tool_calls_rendered_as_the_model_writes_them() -> None:
    assert lean_tool(SHOW_ROWS) == {"name": "show_rows", "description": "Show rows of the table.",
                                    "arguments": {"start?": "integer", "column": "string"}}
    shown = chat_messages([
        {"role": "system", "content": "Help."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "show_rows", "arguments": '{"column": "a<b"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x & y"}], [SHOW_ROWS])
    assert shown[0]["content"].startswith("Help.") and '"start?": "integer"' in shown[0]["content"]
    assert "the first row" not in shown[0]["content"]  # argument descriptions left out
    assert shown[1] == {"role": "assistant", "content": f'{CALL}show_rows:\n{{"column": "a<b"}}'}
    assert shown[2] == {"role": "user", "content": "Result of the tool:\nx & y"}
