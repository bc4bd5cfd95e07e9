from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import Usage, estimate_message_tokens, estimate_tokens
from nbagent._tokens import IMAGE_TOKENS

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
import corpora  # noqa: E402


@pytest.fixture(scope="module")
def o200k() -> Any:
    return corpora.o200k()


@pytest.fixture(scope="module")
def errors(o200k: Any) -> dict[str, tuple[float, float]]:
    """Relative error of (our estimate, chars/4) against o200k_base, per corpus."""
    result = {}
    for name, make in corpora.CORPORA.items():
        samples = make()
        real = sum(len(o200k.encode(s)) for s in samples)
        ours = sum(estimate_tokens(s) for s in samples)
        naive = sum(len(s) / 4 for s in samples)
        result[name] = ((ours - real) / real, (naive - real) / real)
    return result


@pytest.mark.parametrize("name", sorted(corpora.CORPORA), ids=str)
def test_the_estimator_is_within_ten_percent_of_o200k(
    name: str, errors: dict[str, tuple[float, float]]
) -> None:
    assert abs(errors[name][0]) <= 0.10


def test_the_estimators_worst_corpus_is_far_better_than_chars_over_four(
    errors: dict[str, tuple[float, float]],
) -> None:
    worst_ours = max(abs(ours) for ours, _ in errors.values())
    worst_naive = max(abs(naive) for _, naive in errors.values())
    assert worst_ours < worst_naive / 3


def test_empty_text_costs_nothing_and_any_text_costs_something() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens(" ") == 1 and estimate_tokens("a") == 1


def test_digits_cost_one_token_per_three() -> None:
    assert estimate_tokens("123456789") == 3


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
                "prompt_tokens": 1000,
                "completion_tokens": 5,
                "cache_read_input_tokens": 600,
                "cache_creation_input_tokens": 300,
            },
            Usage(100, 5, 600, 300),
        ),
        (
            {
                "input_tokens": 9,
                "output_tokens": 8,
                "cache_read_input_tokens": 17_102,
                "cache_creation_input_tokens": 0,
            },
            Usage(9, 8, 17_102, 0),
        ),
        ({"prompt_tokens": 12, "completion_tokens": None}, Usage(12, 0, 0, 0)),
        ({}, Usage()),
    ],
    ids=["openai-cached", "litellm-anthropic", "raw-anthropic", "nulls", "empty"],
)
def test_usage_is_normalised_across_providers(raw: dict[str, Any], expected: Usage) -> None:
    assert Usage.from_response(raw) == expected


def test_usage_reads_attribute_objects_like_litellms() -> None:
    class Details:
        cached_tokens = 30

    class LiteLLMUsage:
        prompt_tokens = 100
        completion_tokens = 7
        prompt_tokens_details = Details()

    usage = Usage.from_response(LiteLLMUsage())
    assert usage == Usage(70, 7, 30, 0) and usage.context_tokens == 100


def test_the_optional_exact_count_uses_litellms_offline_tokenizer(o200k: Any) -> None:
    from nbagent._llm import count_tokens_exact

    messages = [{"role": "user", "content": "Describe the revenue column of sales_df, please."}]
    exact = count_tokens_exact("gpt-4o", messages)
    assert len(o200k.encode(messages[0]["content"])) < exact < len(o200k.encode(messages[0]["content"])) + 10
