"""The size and limit a "too long" error states (`agent/providers/_limits`), read by the public
`parse_token_limits`: the real corpus (tests/data/overflow_errors.json stores the expected pair
with each text), and rewordings that check the phrasing families are structural, not one
pattern per text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbagent.agent.providers import parse_requested_output
from nbagent.providers import classify_error, parse_token_limits

OVERFLOWS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[2] / "data" / "overflow_errors.json").read_text()
)


def test_most_real_overflow_texts_state_their_numbers() -> None:
    stated = [case for case in OVERFLOWS if case["limits"] != [None, None]]
    assert len(stated) >= 50
    assert sum(None not in case["limits"] for case in stated) >= 40


@pytest.mark.parametrize(
    "case", OVERFLOWS, ids=[f"{c['provider']}-{i}" for i, c in enumerate(OVERFLOWS)]
)
def test_each_real_overflow_text_gives_its_actual_and_limit(case: dict[str, Any]) -> None:
    assert list(parse_token_limits(case["text"])) == case["limits"]


# Rewordings and unseen combinations of the same families (numbers, order, wrappers changed).
VARIANTS = [
    ("Input length (265330) exceeds model's maximum context length (262144).", 265330, 262144),
    ("input (5 tokens) is longer than the models context length (4 tokens)", 5, 4),
    ("exceeds the maximum context length of 10,000 tokens", None, 10_000),
    ("The prompt is too long: 140000, model maximum context length: 131072", 140_000, 131_072),
    (
        "Error: 400 {'message': \"This model's maximum context length is 2048 tokens. However, you "
        'requested 2148 tokens (2048 in the messages, 100 in the completion)."}',
        2148,
        2048,
    ),
    (
        "This model's maximum context length is 32768 tokens. However, your request has 40000 "
        "input tokens. (parameter=input_tokens, value=40000)",
        40_000,
        32_768,
    ),
    (
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 "
        "`inputs` tokens and 500 `max_new_tokens`",
        4500,
        4096,
    ),
    ("Input validation error: `inputs` must have less than 4096 tokens. Given: 5000", 5000, 4096),
    ("request (133595 tokens) exceeds the available context size (131072 tokens)", 133595, 131072),
    (
        "Prompt has 5,958,968 tokens, but the configured context size is 256,000 tokens",
        5_958_968,
        256_000,
    ),
    ("Your request exceeded model token limit: 2097152 (requested: 2306631)", 2306631, 2097152),
    ("prompt is too long: 20 tokens > 10 maximum", 20, 10),
    ("input length and max_tokens exceed context limit: 90 + 20 > 100", 110, 100),
    ("Range of input length should be [1, 129024]", None, 129_024),
    (
        "The input token count (3475108) exceeds the maximum number of tokens allowed (1048576).",
        3_475_108,
        1_048_576,
    ),
    (
        "ValidationException: This model's maximum context length is 8192 tokens. Please reduce the "
        "length of the prompt.",
        None,
        8192,
    ),
]


@pytest.mark.parametrize(("text", "actual", "limit"), VARIANTS)
def test_the_families_read_rewordings_too(text: str, actual: int | None, limit: int) -> None:
    assert parse_token_limits(text) == (actual, limit)
    assert classify_error(text) == "overflow"


def test_numbers_that_are_not_token_counts_are_left_alone() -> None:
    assert parse_token_limits("invalid params, context window exceeds limit (2013)") == (None, None)
    assert parse_token_limits("the request exceeds the available context size") == (None, None)


@pytest.mark.parametrize(
    ("text", "output"),
    [
        ("you requested 9011 tokens (8011 in the messages, 1000 in the completion)", 1000),
        ("(1044 in your prompt; 3072 for the completion)", 3072),
        ("(38892 of text input, 4096 in the output)", 4096),
        ("exceed context limit: 199759 + 8192 > 200000", 8192),
        ("Given: 2019 `inputs` tokens and 30 `max_new_tokens`", 30),
        ("you requested 65535 output tokens and your prompt contains at least 62466", 65535),
        ("'max_tokens' or 'max_completion_tokens' is too large: 8000.", 8000),
        ("prompt is too long: 213462 tokens > 200000 maximum", None),
    ],
)
def test_the_output_reservation_is_read_when_stated(text: str, output: int | None) -> None:
    assert parse_requested_output(text) == output


def test_l4_takes_the_numbers_the_agent_read_and_fits_them() -> None:
    from nbagent.compaction import ptl_fallback

    messages = [{"role": "system", "content": "s"}]
    for t in range(12):
        messages += [{"role": "user", "content": f"question {t} " * 60},
                     {"role": "assistant", "content": f"answer {t} " * 60}]
    text = "prompt is too long: 9000 tokens > 3000 maximum"
    from_numbers = ptl_fallback(messages, parse_token_limits(text))
    assert from_numbers.changed and "3,000-token limit" in from_numbers.reason
    assert len(from_numbers) < len(ptl_fallback(messages, (None, None)))


PTL_ERRORS = [
    ("prompt is too long: 213462 tokens > 200000 maximum", 213_462, 200_000),
    (
        "This model's maximum context length is 4096 tokens. However, you requested 5048 tokens "
        "(4048 in the messages, 1000 in the completion). Please reduce the length of the messages.",
        5_048,
        4_096,
    ),
    (
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        1_200_000,
        1_048_576,
    ),
    (
        "This model's maximum prompt length is 131072 but the request contains 150123 tokens.",
        150_123,
        131_072,
    ),
    (
        "This endpoint's maximum context length is 163840 tokens. However, you requested about 201734 tokens "
        "(193542 of text input, 8192 in the output).",
        201_734,
        163_840,
    ),
    ("prompt token count of 139521 exceeds the limit of 128000", 139_521, 128_000),
    (
        "This model's maximum context length is 2048 tokens. However, you requested 3051 tokens "
        "(2851 in the messages, 200 in the completion). Please reduce the length of the messages or completion.",
        3_051,
        2_048,
    ),
    (
        "request (8231 tokens) exceeds the available context size (8192 tokens), try increasing it",
        8_231,
        8_192,
    ),
    (
        "Trying to keep the first 5233 tokens when context the overflows. However, the model is loaded "
        "with context length of only 4096 tokens, which is not enough.",
        5_233,
        4_096,
    ),
    (
        "The decoder prompt (length 33000) is longer than the maximum model length of 32768.",
        33_000,
        32_768,
    ),
    (
        "Prompt contains 40321 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        40_321,
        32_768,
    ),
    (
        "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 5235.",
        5_235,
        4_081,
    ),
    ("Invalid request: Your request exceeded model token limit: 131072", None, 131_072),
    (
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("text", "actual", "limit"),
    PTL_ERRORS,
    ids=[
        "anthropic",
        "openai",
        "gemini",
        "xai",
        "openrouter",
        "copilot",
        "llama-cpp-python",
        "llama.cpp-server",
        "lm-studio",
        "vllm",
        "mistral",
        "cohere",
        "kimi",
        "openai-responses",
    ],
)
def test_parse_token_limits_reads_actual_and_limit(
    text: str, actual: int | None, limit: int | None
) -> None:
    from nbagent.providers import parse_token_limits

    assert parse_token_limits(text) == (actual, limit)


def test_parse_token_limits_is_public() -> None:
    assert parse_token_limits("prompt is too long: 213462 tokens > 200000 maximum") == (
        213_462,
        200_000,
    )
