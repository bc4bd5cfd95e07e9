"""Model output is untrusted input: `repair_reply` turns whatever a model sent into a valid
assistant message (fresh unique tool-call ids, string names, JSON-object arguments), and
`call_signature` tells two tool calls apart for the loop guard.
"""

from __future__ import annotations

import json
from collections.abc import Set as AbstractSet
from typing import Any

MAX_CALLS_PER_REPLY = 64


def repair_reply(message: dict[str, Any], taken: AbstractSet[str], position: int
                 ) -> dict[str, Any]:
    """Model output is untrusted input: give every tool call a fresh, unique id, a string
    name and arguments that parse as a JSON object (else they are kept as text inside
    one), so the history stays valid whatever the model sent."""
    message = {**message, "role": "assistant"}
    content = message.get("content")
    if content is not None and not isinstance(content, str):  # numbers, odd parts: as text
        parts = content if isinstance(content, list) else [content]
        message["content"] = "".join(
            str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in parts)
    raw_calls = message.get("tool_calls")
    calls = []
    seen = set(taken)
    listed = raw_calls if isinstance(raw_calls, list) else []
    for index, call in enumerate(listed[:MAX_CALLS_PER_REPLY]):
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        call_id = call.get("id") if isinstance(call, dict) else None
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call_id = f"call_{position}_{index}"  # some servers reuse or omit ids
        seen.add(call_id)
        name = function.get("name")
        name = name if isinstance(name, str) and name else "(no name)"
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        try:
            parsed = json.loads(arguments or "{}")
            valid = isinstance(parsed, dict)
        except (ValueError, RecursionError):
            valid = False
        if not valid:
            arguments = json.dumps({"_invalid_arguments": arguments[:10_000]})
        calls.append({"id": call_id, "type": "function",
                      "function": {"name": name, "arguments": arguments or "{}"}})
    if calls:
        message["tool_calls"] = calls
    else:
        message.pop("tool_calls", None)
        if not message.get("content"):
            message["content"] = ""
    return message


def call_signature(call: dict[str, Any]) -> str:
    """The call's name and its arguments with sorted keys."""
    arguments = call["function"].get("arguments") or "{}"
    try:
        arguments = json.dumps(json.loads(arguments), sort_keys=True)
    except (ValueError, RecursionError):
        pass
    return f"{call['function']['name']}:{arguments}"
