"""Reading a provider's "prompt too long" error: the size it compared against the model's
limit, and the limit, from every phrasing family we know — one table of phrasings that
both the limit parser and the error classifier read (`states_overflow`): a new provider's
phrasing is one row here and its real text in tests/data. Pure text parsing.

"Actual" is the number the provider compared with its limit: the prompt, or the prompt plus
the output it reserves when the provider counts both ("you requested 9011 tokens (8011 in the
messages, 1000 in the completion)" → 9011; "199759 + 8192 > 200000" → 207951).
"""

from __future__ import annotations

import re

_N = r"(\d[\d,_]*)"  # a token count, possibly with thousands separators
_FLAGS = re.I | re.S


# Families where the actual size is a sum: (pattern, groups that add up, group of the limit).
# fmt: off
_SUMS = [
    # Anthropic: "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000"
    (rf"{_N}\s*\+\s*{_N}\s*>\s*{_N}", (1, 2), 3),
    # TGI / Together: "must be <= 2048. Given: 3474 `inputs` tokens and 60 `max_new_tokens`"
    (rf"must be\s*<=\s*{_N}\W+given:\s*{_N}\W+inputs\W+tokens and\s*{_N}", (2, 3), 1),
    # vLLM: "'max_tokens' ... is too large: 2000. ... maximum context length is 4096 tokens
    # and your request has 2104 input tokens"
    (rf"too large:\s*{_N}.{{0,80}}?maximum context length is\s*{_N}.{{0,60}}?has\s*{_N}"
     r"\s*input tokens", (1, 3), 2),
]

# Families stating both numbers, (pattern, group of the actual, group of the limit); the first
# that matches wins, so the more specific come first.
_PAIRS = [
    # vLLM, SGLang: "... maximum context length is/of L tokens ... (for) a total of (at least) N"
    (rf"maximum context length (?:is|of)\s*{_N}.{{0,200}}?total of(?: at least)?\s*{_N}", 2, 1),
    # OpenAI, Azure, DeepSeek, vLLM, llama-cpp-python, OpenRouter, Fireworks, xAI:
    # "maximum context/prompt length is L tokens. However, you requested (about) N" /
    # "your messages resulted in N" / "your request has N input tokens" / "the request contains N"
    (rf"maximum (?:context|prompt|input) length is\s*{_N}.{{0,80}}?(?:requested|resulted in|"
     rf"request has|request contains|contains|has)(?: about| at least)?\s*{_N}", 2, 1),
    # Anthropic, Bedrock (Claude): "prompt is too long: N tokens > L maximum"
    (rf"{_N}\s*tokens?\s*>\s*{_N}", 1, 2),
    # LM Studio / llama.cpp: "(n_keep: N>= n_ctx: L)"
    (rf"n_keep\W*{_N}\s*>=?\s*n_ctx\W*{_N}", 1, 2),
    # llama.cpp server JSON: "n_prompt_tokens":N,"n_ctx":L ; Ollama log: prompt=N limit=L
    (rf"n_prompt_tokens\W+{_N}.{{0,40}}?n_ctx\W+{_N}", 1, 2),
    (rf"\bprompt={_N}\s+limit={_N}", 1, 2),
    # A parenthesised size, then a verb of excess, then the limit (parenthesised or not):
    # llama.cpp "request (N tokens) exceeds the available context size (L tokens)";
    # SGLang/Together "The input (N tokens) is longer than the model's context length (L ...";
    # SGLang "Input length (N tokens) exceeds the maximum allowed length (L tokens)";
    # Gemini "The input token count (N) exceeds the maximum number of tokens allowed (L)";
    # vLLM "The prompt (total length N) is too long to fit into the model (context length L)",
    # "The decoder prompt (length N) is longer than the maximum model length of L",
    # "Input prompt (N tokens) is too long and exceeds limit of L";
    # llama-cpp-python "Requested tokens (N) exceed context window of L"
    (rf"\(\s*(?:total )?(?:length )?{_N}(?:\s*tokens?)?\s*\)[^()\d]{{0,90}}?"
     rf"(?:exceed|longer than|too long|greater than|too large)[^()\d]{{0,90}}?"
     rf"\(?\s*(?:context )?(?:length )?{_N}", 1, 2),
    # A labelled size, then the limit, unparenthesised:
    # Copilot "prompt token count of N exceeds the limit of L";
    # Vertex "the input token count is N but model only supports up to L";
    # Mistral "Prompt contains N tokens ... too large for model with L maximum context length";
    # Cerebras "Current length is N while limit is L"; Kimi "total message size N exceeds limit L";
    # LM Studio "keep the first N tokens ... context length of only L"; "Input length N exceeds
    # context length L"; DS4 "Prompt has N tokens, but the configured context size is L tokens";
    # "Input length N exceeds the maximum allowed input length of L tokens"
    (rf"(?:token count(?: of| is)?|input length|prompt has|prompt contains|current length is|"
     rf"message size|keep the first)\s*{_N}.{{0,160}}?(?:limit(?: of| is)?|supports up to|"
     rf"context (?:size|length)(?: is)?(?: of only)?|allowed input length of|model with)\s*{_N}",
     1, 2),
    # Limit first, then what was received: Cohere "cannot exceed L - received N"; TGI "`inputs`
    # must have less than L tokens. Given: N"; Kimi "exceeded model token limit: L (requested: N)"
    (rf"(?:cannot exceed|must have less than|token limit:?)\s*{_N}[^\d]{{0,40}}?"
     rf"(?:received|given:|requested:?)\s*{_N}", 2, 1),
    # IBM watsonx.ai: "the number of input tokens N cannot exceed the total tokens limit L for
    # this model"
    (rf"number of input tokens\s*{_N}\s*cannot exceed the total tokens? limit\s*{_N}", 1, 2),
]
# fmt: on
_SUM_RES = [(re.compile(p, _FLAGS), parts, limit) for p, parts, limit in _SUMS]
_PAIR_RES = [(re.compile(p, _FLAGS), actual, limit) for p, actual, limit in _PAIRS]

_LIMIT_ONLY = re.compile(
    r"(?:maximum context length(?: is| of|:)?|token limit:?|max(?:imum)? length:?|"
    r"context (?:length|window|size) (?:is |of )?(?:only )?|max(?:imum)? (?:model )?length of|"
    r"limit of|range of input length should be \[\s*1\s*,|must be\s*<=|must not exceed|"
    r"context window of|supports up to|"
    r"exceeds? (?:the )?(?:max(?:imum)? )?(?:context )?(?:limit|length) (?:of )?)"
    rf"\s*{_N}|number of tokens allowed\s*\(?{_N}",  # not "exceeds limit (2013)": a code
    re.I,
)
_ACTUAL_ONLY = re.compile(
    rf"(?:(?:requested|resulted in|you sent|input (?:of|has)|contains) {_N} tokens|"
    rf"too long:\s*{_N})",
    re.I,
)
_OUTPUT = [
    re.compile(p, re.I)
    for p in (
        rf"{_N} (?:in|for) the completion",  # OpenAI, DeepSeek, vLLM, Azure
        rf"{_N} in the output",  # OpenRouter
        rf"{_N} tokens for the completion",  # SGLang
        rf"requested {_N} output tokens",  # vLLM
        rf"and {_N}\W+max_new_tokens",  # TGI
        rf"\d\s*\+\s*{_N}\s*>",  # Anthropic "input + max_tokens > limit"
        rf"too large:\s*{_N}",  # vLLM "'max_tokens' ... is too large: N"
    )
]


def _int(text: str) -> int:
    return int(re.sub(r"[,_]", "", text))


def parse_token_limits(text: str) -> tuple[int | None, int | None]:
    """Read (actual prompt size, the model's limit) from a provider's overflow error.

    Either may be None when the text does not say. Examples:
    "prompt is too long: 213462 tokens > 200000 maximum" → (213462, 200000);
    "maximum context length is 4096 tokens. However, you requested 5048" → (5048, 4096);
    "exceed context limit: 199759 + 8192 > 200000" → (207951, 200000).
    """
    for pattern, parts, limit in _SUM_RES:
        match = pattern.search(text)
        if match:
            return sum(_int(match.group(p)) for p in parts), _int(match.group(limit))
    for pattern, actual, limit in _PAIR_RES:
        match = pattern.search(text)
        if match:
            return _int(match.group(actual)), _int(match.group(limit))
    limit_match = _LIMIT_ONLY.search(text)
    actual_match = _ACTUAL_ONLY.search(text)
    return (
        _int(actual_match.group(1) or actual_match.group(2)) if actual_match else None,
        _int(limit_match.group(1) or limit_match.group(2)) if limit_match else None,
    )


def states_overflow(text: str) -> bool:
    """Whether `text` states a size over a limit in one of the phrasings above (the
    classifier reads an overflow from any of them)."""
    return any(pattern.search(text) for pattern, _, _ in (*_SUM_RES, *_PAIR_RES))


def parse_requested_output(text: str) -> int | None:
    """The output reservation an overflow error counts in its total (max_tokens and kin), if
    it states one: "(8011 in the messages, 1000 in the completion)" → 1000. When it alone
    reaches the limit, dropping history cannot help: the request is misconfigured."""
    for pattern in _OUTPUT:
        match = pattern.search(text)
        if match:
            return _int(match.group(1))
    return None
