from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nbagent import Usage, estimate_message_tokens, estimate_tokens
from nbagent.engine._tokens import (
    _WEIGHTS,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    _features,
    count_message_tokens,
    count_tools_tokens,
)

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import corpora  # noqa: E402


@pytest.fixture(scope="module")
def o200k() -> Any:
    return corpora.o200k()


@pytest.fixture(scope="module")
def errors(o200k: Any) -> dict[str, tuple[float, float, float]]:
    """Relative error of the estimate against o200k_base on each corpus's held-out half,
    beside chars/4's, and the estimate's error on the training half."""

    def error(texts: list[str], count: Any) -> float:
        real = sum(len(o200k.encode_ordinary(t)) for t in texts)
        return sum(count(t) for t in texts) / real - 1

    result = {}
    for name, make in corpora.CORPORA.items():
        corpus = make()
        result[name] = (
            error(corpus.held_out, estimate_tokens),
            error(corpus.held_out, lambda t: len(t) / 4),
            error(corpus.train, estimate_tokens),
        )
    return result


@pytest.mark.parametrize("name", list(corpora.CORPORA), ids=str)
def test_on_held_out_text_the_estimate_is_within_ten_percent_and_never_five_below(
    name: str, errors: dict[str, tuple[float, float, float]]
) -> None:
    held_out = errors[name][0]
    assert -0.05 <= held_out <= 0.10


def test_the_held_out_error_is_close_to_the_training_error(
    errors: dict[str, tuple[float, float, float]],
) -> None:
    """The weights are not tuned to the text they were fitted on."""
    gaps = {name: abs(held - trained) for name, (held, _, trained) in errors.items()}
    assert max(gaps.values()) < 0.15
    assert sorted(gaps.values())[len(gaps) // 2] < 0.03


def test_the_estimators_worst_kind_is_far_better_than_chars_over_four(
    errors: dict[str, tuple[float, float, float]],
) -> None:
    worst_ours = max(abs(ours) for ours, _, _ in errors.values())
    worst_naive = max(abs(naive) for _, naive, _ in errors.values())
    assert worst_ours < worst_naive / 5


@given(st.text())
def test_the_fast_path_computes_the_weighted_sum_of_the_features(text: str) -> None:
    total = sum(_WEIGHTS.get(name, 0.0) * n for name, n in _features(text).items())
    assert estimate_tokens(text) == (max(1, round(total)) if text else 0)


@pytest.mark.parametrize(
    "text",
    ["a\udc80b", "\x00\x1b[0m", "\u200d" * 5, "\U0010ffff", "é" * 1000, " " * 5000, "9" * 400],
    ids=["lone-surrogate", "controls", "zwj", "last-codepoint", "accents", "spaces", "digits"],
)
def test_any_text_gets_an_estimate(text: str) -> None:
    assert estimate_tokens(text) >= 1


def test_empty_text_costs_nothing_and_any_text_costs_something() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(" ") == 1 and estimate_tokens("a") == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("123456789", 3),  # o200k splits digit runs into threes
        ("hello world", 2),
        ("What is the mean of the revenue column?", 9),
        ("x   12.5", 6),  # "x", "  ", " ", "12", ".", "5"
        ("  (a)", 4),  # " ", " (", "a", ")"
    ],
)
def test_pieces_are_counted_the_way_o200k_splits_them(text: str, expected: int, o200k: Any) -> None:
    assert estimate_tokens(text) == expected == len(o200k.encode_ordinary(text))


def test_message_estimate_counts_tool_call_arguments_and_images() -> None:
    call = {
        "id": "a",
        "type": "function",
        "function": {"name": "describe", "arguments": '{"name": "sales_df"}'},
    }
    bare = estimate_message_tokens({"role": "assistant", "content": "ok"})
    with_call = estimate_message_tokens(
        {"role": "assistant", "content": "ok", "tool_calls": [call]}
    )
    assert with_call > bare + estimate_tokens('{"name": "sales_df"}')
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 50_000}}
    assert estimate_message_tokens({"role": "user", "content": [image]}) < IMAGE_TOKENS + 10


def test_messages_and_tools_can_be_counted_with_any_text_counter() -> None:
    seen: list[str] = []

    def count_words(text: str) -> int:
        seen.append(text)
        return len(text.split())

    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "three short words"}],
        "tool_calls": [{"id": "c", "function": {"name": "describe", "arguments": "{}"}}],
    }
    counted = count_message_tokens(message, count_words)
    assert "three short words" in seen and "describe" in seen and "{}" in seen
    assert counted > MESSAGE_OVERHEAD + 3
    tools = [{"type": "function", "function": {"name": "describe"}}]
    assert count_tools_tokens(tools, count_words) < count_tools_tokens(tools)


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


@pytest.fixture(scope="module")
def litellm_module() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


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


def test_an_openai_models_messages_are_counted_with_its_own_tokenizer(o200k: Any) -> None:
    from nbagent.agent.models import counter_for

    counter = counter_for("gpt-4o")
    assert counter is not None
    message = {"role": "user", "content": "Describe the revenue column of sales_df, please."}
    content = len(o200k.encode(message["content"]))
    assert content < count_message_tokens(message, counter) < content + 10
