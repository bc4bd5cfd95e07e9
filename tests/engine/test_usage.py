"""`Usage.from_response`: what providers report (every shape, litellm's normalised one
included), the cached part of the prompt counted in the context."""

from __future__ import annotations

import os
from typing import Any

import pytest

from nbagent import Usage


@pytest.fixture(scope="module")
def litellm_module() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {
                "prompt_tokens": 2006,
                "completion_tokens": 300,
                "prompt_tokens_details": {"cached_tokens": 1920},
            },
            Usage(86, 300, 1920, 0),
        ),
        (
            {
                "input_tokens": 2006,
                "output_tokens": 300,
                "input_tokens_details": {"cached_tokens": 1920},
            },
            Usage(86, 300, 1920, 0),
        ),
        (
            {
                "input_tokens": 9,
                "output_tokens": 8,
                "cache_read_input_tokens": 17_102,
                "cache_creation_input_tokens": 40,
            },
            Usage(9, 8, 17_102, 40),
        ),
        (
            {"prompt_tokens": 100, "completion_tokens": 3, "prompt_cache_hit_tokens": 60},
            Usage(40, 3, 60, 0),
        ),
        (
            {
                "promptTokenCount": 5000,
                "candidatesTokenCount": 20,
                "thoughtsTokenCount": 7,
                "cachedContentTokenCount": 4096,
            },
            Usage(904, 27, 4096, 0),
        ),
        (
            {
                "inputTokens": 10,
                "outputTokens": 5,
                "cacheReadInputTokens": 300,
                "cacheWriteInputTokens": 50,
            },
            Usage(10, 5, 300, 50),
        ),
        ({"prompt_tokens": 12, "completion_tokens": None}, Usage(12, 0, 0, 0)),
        ({}, Usage()),
    ],
    ids=[
        "openai-chat",
        "openai-responses",
        "anthropic",
        "deepseek",
        "gemini",
        "bedrock",
        "nulls",
        "empty",
    ],
)
def test_usage_counts_the_cached_prompt_in_the_context_whatever_the_shape(
    raw: dict[str, Any], expected: Usage
) -> None:
    assert Usage.from_response(raw) == expected


def test_usage_reads_what_litellm_makes_of_each_provider(litellm_module: Any) -> None:
    """litellm normalises every provider to prompt_tokens, cached part included; the
    shapes here come from litellm's own converters, not from a guess of them."""
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    from litellm.llms.bedrock.chat.converse_transformation import AmazonConverseConfig

    anthropic = AnthropicConfig().calculate_usage(
        {
            "input_tokens": 9,
            "output_tokens": 8,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 20,
        },
        None,
    )
    bedrock = AmazonConverseConfig().transform_usage(
        {
            "inputTokens": 10,
            "outputTokens": 5,
            "totalTokens": 15,
            "cacheReadInputTokens": 300,
            "cacheWriteInputTokens": 50,
        }
    )
    openai = litellm_module.Usage(
        prompt_tokens=2006, completion_tokens=300, prompt_tokens_details={"cached_tokens": 1920}
    )
    deepseek = litellm_module.Usage(
        prompt_tokens=100, completion_tokens=3, prompt_cache_hit_tokens=60
    )
    assert Usage.from_response(anthropic) == Usage(9, 8, 100, 20)
    assert Usage.from_response(bedrock) == Usage(10, 5, 300, 50)
    assert Usage.from_response(openai) == Usage(86, 300, 1920, 0)
    assert Usage.from_response(deepseek) == Usage(40, 3, 60, 0)
    assert Usage.from_response(anthropic).context_tokens == anthropic.prompt_tokens == 129
