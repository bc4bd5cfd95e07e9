"""How the embedded model's prompt shows tools and tool calls, as text: the lean tool list
in the system message, a call of the history as the model writes one, and the request's
messages as plain role/text pairs for the chat template. The chat handler renders with it
(`_chat_handler`), and the agent counts what the tools cost from the same text
(`tool_prompt`), so `%context` shows what is sent.

Standard library only: the server's process loads it beside the chat handler, without
importing nbagent or llama_cpp here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# Tool calls as llama-cpp-python's chatml-function-calling prompts for them: SmolLM2-135M
# was trained on no tool-call format (it never writes Hermes' `<tool_call>` unasked, and
# always does when made to choose it), but it weighs "functions." against "message:"
# sensibly: a data question gets a call, a greeting an answer. Hermes-style calls are
# still read (`_chat_handler.parse_calls`), as a user's own GGUF may write them.
CALL, ANSWER = "functions.", "message:"
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
MARKERS = (CALL, CALL_OPEN)
TOOLS_PROMPT = (
    "\n\nYou can call these tools:\n<tools>\n{tools}\n</tools>\n"
    "To call a tool, reply with:\nfunctions.<tool name>:\n{{<arguments as JSON>}}\n"
    "To answer, reply with:\nmessage: <your answer>")


def lean_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as the prompt shows it: its name, the first line of its description and
    each argument's type (`?` after an optional one's name), in a fraction of the
    tokens of its JSON schema."""
    function = tool.get("function", tool)
    schema = function.get("parameters") or {}
    required = set(schema.get("required") or ())
    arguments = {(name if name in required else f"{name}?"): spec.get("type", "any")
                 for name, spec in (schema.get("properties") or {}).items()}
    description = (function.get("description") or "").strip().split("\n")[0]
    return {"name": function["name"], "description": description, "arguments": arguments}


def tools_text(tools: Sequence[dict[str, Any]]) -> str:
    """The tool prompt appended to the system message ("" when no tool is shown)."""
    if not tools:
        return ""
    lines = "\n".join(json.dumps(lean_tool(t), ensure_ascii=False) for t in tools)
    return TOOLS_PROMPT.format(tools=lines)


def call_text(call: dict[str, Any]) -> str:
    """A tool call of the history as the model writes one."""
    function = call.get("function", {})
    arguments: Any = function.get("arguments") or "{}"
    try:
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        pass  # the model's own malformed text: shown as it was
    shown = json.dumps(arguments, ensure_ascii=False) if not isinstance(arguments, str) else (
        arguments)
    return f"{CALL}{function.get('name', '')}:\n{shown}\n"


def chat_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]]
                  ) -> list[dict[str, str]]:
    """The request's messages as plain role/text pairs for the template: the tool
    prompt in the system message, tool calls as text, tool results as user messages."""
    shown: list[dict[str, str]] = []
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if isinstance(content, list):  # OpenAI content parts: their text, in order
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if role == "tool":
            role, content = "user", f"Result of the tool:\n{content}"
        elif role == "assistant" and message.get("tool_calls"):
            calls = "".join(call_text(c) for c in message["tool_calls"]).rstrip("\n")
            content = f"{content}\n{calls}" if content else calls
        shown.append({"role": role, "content": content})
    if tools:
        if not shown or shown[0]["role"] != "system":
            shown.insert(0, {"role": "system", "content": ""})
        shown[0] = {"role": "system", "content": shown[0]["content"] + tools_text(tools)}
    return shown
