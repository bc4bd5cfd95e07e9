"""L4: the reactive fallback after a provider says the prompt is too long, and
the parser that reads (actual, limit) out of the provider's error text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._common import Layout, LevelResult, Message, first_user_index, tokens

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


def ptl_fallback(
    messages: Sequence[Message],
    error: BaseException | str | None = None,
    drop_turns: int = 3,
    *,
    headroom: float = 0.9,
) -> LevelResult:
    """Drop the oldest whole rounds until the prompt fits `headroom` of the limit.

    The limit (and the actual size, which calibrates our estimate to the
    provider's count) are parsed from `error`; with no limit in it, the oldest
    `drop_turns` rounds go. Never dropped: the system prompt, compaction
    blocks, the first user request, the newest round (with any pending turn).
    Whole rounds only, so no tool result is orphaned.
    """
    text = str(error) if error is not None else ""
    actual, limit = parse_token_limits(text)
    layout = Layout.of(messages)
    rounds = list(layout.rounds)
    if len(rounds) < 2:
        return LevelResult.unchanged(messages, "only one round: nothing old enough to drop")
    first = first_user_index(messages)
    droppable = rounds[:-1]  # the newest round stays
    ends = [*rounds[1:]]
    estimate = tokens(messages)
    ratio = actual / estimate if actual and estimate else 1.0
    target = headroom * limit / ratio if limit else None

    def rebuild(dropped: int) -> list[Message]:
        cut_from, cut_to = droppable[0], ends[dropped - 1]
        keep_first = [messages[first]] if first is not None and cut_from <= first < cut_to else []
        return [*messages[:cut_from], *keep_first, *messages[cut_to:]]

    if target is None:
        dropped = min(drop_turns, len(droppable))
        result = rebuild(dropped)
        how = f"no limit in the error: dropped the oldest {dropped} rounds"
    else:
        for dropped in range(1, len(droppable) + 1):
            result = rebuild(dropped)
            if tokens(result) <= target:
                break
        how = (
            f"dropped the oldest {dropped} rounds to fit 90% of the {limit:,}-token limit"
            if tokens(result) <= target
            else f"dropped every old round ({dropped}); still over 90% of {limit:,}"
        )
    return LevelResult(result, changed=True, reason=how)
