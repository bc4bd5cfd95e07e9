"""Token counts of what is sent, with no network: per-message framing for OpenAI-format
messages (`count_message_tokens`, with any text counter: the estimator by default), image
parts from their PNG header, tool schemas. The text estimator is `_estimator`; exact
tokenizers live in `_counters` (agent layer); the running context size (usage + counts)
lives in `_tracker`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._estimator import estimate_tokens

# estimate_tokens too: the default text counter, imported from here across the package
__all__ = ["IMAGE_TOKENS", "MESSAGE_OVERHEAD", "REPLY_PRIMING", "TOOL_CALL_OVERHEAD",
           "TextCounter", "count_message_tokens", "count_tools_tokens",
           "estimate_message_tokens", "estimate_tokens", "image_tokens"]

MESSAGE_OVERHEAD = 4  # role marker and separators around every message
TOOL_CALL_OVERHEAD = 8  # id, type and name framing of one tool call
IMAGE_TOKENS = 1_000  # an image part of unknown size; providers charge 85 to ~1,600
REPLY_PRIMING = 3  # every request ends with the assistant's turn marker

TextCounter = Callable[[str], int]


def _content_tokens(content: Any, count_text: TextCounter) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return count_text(content)
    total = 0
    for part in content:
        kind = part.get("type")
        if kind == "text":
            total += count_text(str(part.get("text", "")))
        elif kind in ("image_url", "image", "input_image"):
            total += image_tokens(part)
        else:
            total += count_text(json.dumps(part, ensure_ascii=False, sort_keys=True))
    return total


def image_tokens(part: Mapping[str, Any]) -> int:
    """One image part: for a PNG `data:` URL, what providers charge for its size (the
    larger of Anthropic's ~w·h/750, at most 1,600, and OpenAI's 85 + 170 per 512-px tile,
    each after the provider's own downscaling), read from the PNG header, never its base64
    length; for any other image, `IMAGE_TOKENS`."""
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, Mapping) else url
    head = url[:120] if isinstance(url, str) else ""
    _, _, data = head.partition(";base64,")
    try:
        header = base64.b64decode(data[:32]) if head.startswith("data:image/png") else b""
    except (binascii.Error, ValueError):
        header = b""
    if len(header) < 24 or header[12:16] != b"IHDR":
        return IMAGE_TOKENS
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    if not (width and height):
        return IMAGE_TOKENS
    fit = min(1.0, 1_568 / max(width, height))
    anthropic = min(1_600, width * fit * height * fit / 750)  # it downscales past ~1.15 MP
    fit = min(1.0, 2_048 / max(width, height))
    fit *= min(1.0, 768 / (min(width, height) * fit))
    tiles = math.ceil(width * fit / 512) * math.ceil(height * fit / 512)
    return max(85, round(max(anthropic, 85 + 170 * tiles)))


def count_message_tokens(
    message: Mapping[str, Any], count_text: TextCounter = estimate_tokens
) -> int:
    """Tokens of one OpenAI-format message as sent: content, tool calls, framing.

    `count_text` counts each piece of text: the estimator by default, or a model's
    exact tokenizer (`nbagent.agent.models._counters.counter_for`). Framing is a fixed overhead.
    """
    total = MESSAGE_OVERHEAD + _content_tokens(message.get("content"), count_text)
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        total += TOOL_CALL_OVERHEAD
        total += count_text(str(function.get("name", "")))
        total += count_text(str(function.get("arguments", "")))
    if message.get("name"):
        total += count_text(str(message["name"]))
    return total


def estimate_message_tokens(message: Mapping[str, Any]) -> int:
    """Estimate one OpenAI-format message as sent: content, tool calls, framing."""
    return count_message_tokens(message, estimate_tokens)


def count_tools_tokens(
    tools: Iterable[Mapping[str, Any]], count_text: TextCounter = estimate_tokens
) -> int:
    """Tokens of the tool schemas sent with a request (they count against the window)."""
    return sum(
        TOOL_CALL_OVERHEAD + count_text(json.dumps(tool, ensure_ascii=False, sort_keys=True))
        for tool in tools
    )
