"""Token estimates with no tokenizer and no network: a character-class estimator
for text, per-message overheads for OpenAI-format messages, and the `Usage`
record that normalises what providers report. Exact counts live in `_llm`;
the running context size (usage + estimate) lives in `_tracker`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# One pass splits text the way BPE pre-tokenizers do: words with their leading
# space, digit runs, punctuation runs, whitespace runs, and single CJK characters.
# Each piece then costs what o200k_base/cl100k_base typically spend on it; the
# weights were fitted on bench/estimator_accuracy.py's corpora.
_PIECES = re.compile(
    r"""
    (?P<cjk>[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef])
  | (?P<word>[^\r\n\tA-Za-z0-9]?[A-Za-z]+)
  | (?P<other>\ ?[^\W\d_A-Za-z]+)
  | (?P<digits>\d+)
  | (?P<newlines>\s*\n\s*)
  | (?P<spaces>[ \t]+)
  | (?P<punct>\ ?[^\w\s]+|_+)
    """,
    re.VERBOSE,
)

_SHORT_WORD = 12  # a word up to this many letters is almost always one token
_WORD_CHARS_PER_TOKEN = 8.0  # a longer identifier or rare word splits into chunks
_OTHER_CHARS_PER_TOKEN = 2.6  # Cyrillic, Greek, Arabic, Devanagari, ... letters
_CJK_TOKENS_PER_CHAR = 1.0
_DIGITS_PER_TOKEN = 3  # o200k and cl100k split digit runs into groups of three
_PUNCT_CHARS_PER_TOKEN = 1.5

MESSAGE_OVERHEAD = 4  # role marker and separators around every message
TOOL_CALL_OVERHEAD = 8  # id, type and name framing of one tool call
IMAGE_TOKENS = 1_000  # one image part; providers charge 85 to ~1,600
REPLY_PRIMING = 3  # every request ends with the assistant's turn marker


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens `text` costs a modern BPE tokenizer.

    Far closer than `len(text) / 4` on what notebooks produce: code, JSON,
    numeric tables and non-Latin scripts (see docs/performance.md).
    """
    if not text:
        return 0
    total = 0.0
    for match in _PIECES.finditer(text):
        kind = match.lastgroup
        size = match.end() - match.start()
        if kind == "word":
            letters = size - 1 if not text[match.start()].isalpha() else size
            total += 1 if letters <= _SHORT_WORD else letters / _WORD_CHARS_PER_TOKEN
        elif kind == "cjk":
            total += _CJK_TOKENS_PER_CHAR
        elif kind == "other":
            total += max(1.0, size / _OTHER_CHARS_PER_TOKEN)
        elif kind == "digits":
            total += -(-size // _DIGITS_PER_TOKEN)
        elif kind == "punct":
            total += max(1.0, size / _PUNCT_CHARS_PER_TOKEN)
        else:  # whitespace: a single space before a word is free, runs cost one token
            total += 1
    return max(1, round(total))


def _content_tokens(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return estimate_tokens(content)
    total = 0
    for part in content:
        kind = part.get("type")
        if kind == "text":
            total += estimate_tokens(str(part.get("text", "")))
        elif kind in ("image_url", "image", "input_image"):
            total += IMAGE_TOKENS
        else:
            total += estimate_tokens(json.dumps(part, ensure_ascii=False, sort_keys=True))
    return total


def estimate_message_tokens(message: Mapping[str, Any]) -> int:
    """Estimate one OpenAI-format message as sent: content, tool calls, framing."""
    total = MESSAGE_OVERHEAD + _content_tokens(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        total += TOOL_CALL_OVERHEAD
        total += estimate_tokens(str(function.get("name", "")))
        total += estimate_tokens(str(function.get("arguments", "")))
    if message.get("name"):
        total += estimate_tokens(str(message["name"]))
    return total


def estimate_tools_tokens(tools: Iterable[Mapping[str, Any]]) -> int:
    """Estimate the tool schemas sent with a request (they count against the window)."""
    return sum(
        TOOL_CALL_OVERHEAD + estimate_tokens(json.dumps(tool, ensure_ascii=False, sort_keys=True))
        for tool in tools
    )


@dataclass(frozen=True)
class Usage:
    """Token usage of one model response, normalised across providers.

    `input_tokens` excludes the cached parts; `context_tokens` is what the
    request really occupied in the window (input + cache read + cache write).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @classmethod
    def from_response(cls, usage: Any) -> Usage:
        """Read a usage object or dict in OpenAI/litellm or raw Anthropic shape.

        OpenAI and litellm count cached tokens inside `prompt_tokens`; Anthropic's
        raw `input_tokens` excludes `cache_read_input_tokens` and
        `cache_creation_input_tokens`.
        """

        def get(obj: Any, key: str) -> Any:
            return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)

        def number(obj: Any, key: str) -> int:
            value = get(obj, key)
            return int(value) if isinstance(value, (int, float)) else 0

        read = number(usage, "cache_read_input_tokens")
        write = number(usage, "cache_creation_input_tokens")
        details = get(usage, "prompt_tokens_details")
        if details is not None:
            read = read or number(details, "cached_tokens")
            write = write or number(details, "cache_creation_tokens")
        if get(usage, "prompt_tokens") is not None:
            prompt = number(usage, "prompt_tokens")
            output = number(usage, "completion_tokens")
            return cls(max(0, prompt - read - write), output, read, write)
        return cls(number(usage, "input_tokens"), number(usage, "output_tokens"), read, write)
