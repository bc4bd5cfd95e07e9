"""Reading a provider's "prompt too long" error: the actual prompt size and the model's
limit, from every phrasing we know. Pure text parsing; L4 and the agent's classifier use it.
"""

from __future__ import annotations

import re

_N = r"(\d[\d,_]*)"
# (pattern, group of the actual size, group of the limit): most specific first.
# fmt: off
_PAIR_PATTERNS = [
    (rf"{_N}\s*tokens?\s*>\s*{_N}", 1, 2),  # Anthropic, Bedrock (Claude)
    # OpenAI, vLLM, llama.cpp (python server), OpenRouter, xAI, DeepSeek
    (rf"maximum (?:context|prompt) length is {_N}.*?(?:requested|resulted in|contains)"
     rf"(?: about)? {_N}", 2, 1),
    (rf"input token count \(?{_N}\)? exceeds the maximum number of tokens allowed \(?{_N}", 1, 2),
    (rf"prompt token count of {_N} exceeds the limit of {_N}", 1, 2),  # GitHub Copilot
    (rf"prompt contains {_N} tokens.*?with {_N} maximum context", 1, 2),  # Mistral
    (rf"request \({_N} tokens\) exceeds the available context size \({_N}", 1, 2),  # llama.cpp
    (rf"keep the first {_N} tokens.*?context length of only {_N}", 1, 2),  # LM Studio
    (rf"prompt \(length {_N}\) is longer than the maximum model length of {_N}", 1, 2),  # vLLM
    (rf"cannot exceed {_N}\D{{1,12}}received {_N}", 2, 1),  # Cohere
    (rf"(?:input|prompt) (?:length|is) {_N}.*?(?:exceeds|greater than|over).*?{_N}", 1, 2),
]
# fmt: on
_PAIRS = [(re.compile(p, re.I | re.S), actual, limit) for p, actual, limit in _PAIR_PATTERNS]
_LIMIT_ONLY = re.compile(
    r"(?:maximum context length(?: is| of)?|token limit:?"
    r"|context (?:length|window|size) (?:is|of)(?: only)?|max(?:imum)? (?:model )?length of"
    r"|limit of|exceeds? (?:the )?(?:max(?:imum)? )?(?:context )?(?:limit|length) (?:of )?)"
    rf"\s*\(?{_N}",
    re.I,
)
_ACTUAL_ONLY = re.compile(
    rf"(?:requested|resulted in|you sent|input (?:of|has)|contains) {_N} tokens", re.I
)


def _int(text: str) -> int:
    return int(re.sub(r"[,_]", "", text))


def parse_token_limits(text: str) -> tuple[int | None, int | None]:
    """Read (actual prompt size, the model's limit) from a provider's overflow error.

    Either may be None when the text does not say. Examples:
    "prompt is too long: 213462 tokens > 200000 maximum" → (213462, 200000);
    "maximum context length is 4096 tokens. However, you requested 5048" → (5048, 4096).
    """
    for pattern, actual, limit in _PAIRS:
        match = pattern.search(text)
        if match:
            return _int(match.group(actual)), _int(match.group(limit))
    limit_match = _LIMIT_ONLY.search(text)
    actual_match = _ACTUAL_ONLY.search(text)
    return (
        _int(actual_match.group(1)) if actual_match else None,
        _int(limit_match.group(1)) if limit_match else None,
    )
