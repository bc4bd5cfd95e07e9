"""Provider errors take the right path (`providers/_errors`): the classifier on corpora of
real error texts (tests/data, each with its source), the retry policy per kind and the wait
a provider asks for, and the stop reason that means "the window ran out". The hint that
names the credentials to set is tests/agent/providers/test_credentials.py's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nbagent.agent.providers import (
    is_stop_reason_overflow,
    retry_after_seconds,
    should_retry,
)
from nbagent.providers import classify_error, is_context_overflow
from nbagent.testing import provider_error

DATA = Path(__file__).parents[2] / "data"
OVERFLOWS: list[dict[str, Any]] = json.loads((DATA / "overflow_errors.json").read_text())
OTHERS: list[dict[str, Any]] = json.loads((DATA / "provider_errors.json").read_text())
RETRIED = {"rate_limit", "transient"}


def _ids(cases: list[dict[str, Any]], label: str = "") -> list[str]:
    return [f"{case['provider']}-{case.get('kind', label)}-{i}" for i, case in enumerate(cases)]


def test_the_corpora_are_wide_and_sourced() -> None:
    assert len(OVERFLOWS) >= 60 and len({c["provider"] for c in OVERFLOWS}) >= 25
    kinds = Counter(case["kind"] for case in OTHERS)
    assert set(kinds) == {"rate_limit", "transient", "auth", "quota", "request_too_large", "other"}
    assert len(OTHERS) >= 60 and min(kinds.values()) >= 5
    assert all(case["source"] for case in OVERFLOWS + OTHERS)


@pytest.mark.parametrize("case", OVERFLOWS, ids=_ids(OVERFLOWS, "overflow"))
def test_every_real_overflow_text_is_an_overflow(case: dict[str, Any]) -> None:
    assert classify_error(case["text"], case["status"]) == "overflow"
    assert is_context_overflow(provider_error(case["status"] or 400, case["text"]))
    if case["text"].strip("{} "):  # the text alone says so too
        assert is_context_overflow(case["text"])


@pytest.mark.parametrize("case", OTHERS, ids=_ids(OTHERS))
def test_every_real_non_overflow_text_gets_its_kind(case: dict[str, Any]) -> None:
    assert classify_error(case["text"], case["status"]) == case["kind"]
    assert not is_context_overflow(case["text"])  # not an overflow with or without a status
    if case["status"] is not None:
        error = provider_error(case["status"], case["text"])
        assert classify_error(error) == case["kind"]
        assert should_retry(error) == (case["kind"] in RETRIED)


@pytest.mark.parametrize("name", [
    "too_many_requests", "TooManyRequestsException", "Too-Many-Requests", "RESOURCE_EXHAUSTED",
    "ResourceExhausted", "rate_limit_exceeded", "concurrency_limit_exceeded",
    "tokens_per_minute_exceeded", "request_limit_reached", "SlowDown",
])
def test_a_rate_limit_named_by_its_type_alone_is_a_rate_limit(name: str) -> None:
    """A provider's type name spells the words with "_" or "-" or runs them together."""
    assert classify_error(f'{{"error": {{"type": "{name}"}}}}', 400) == "rate_limit"
    assert classify_error(name) == "rate_limit"


def test_a_quota_per_minute_is_a_rate_limit_however_the_minute_is_spelled() -> None:
    for per_minute in ("requests per minute", "requests_per_minute", "RequestsPerMinute"):
        assert classify_error(f"429 Quota exceeded for {per_minute} per project") == (
            "rate_limit"), per_minute
    assert classify_error("429 Quota exceeded for requests per day") == "quota"


def test_a_request_over_a_per_minute_limit_by_itself_is_not_a_rate_limit() -> None:
    too_large = "on tokens per min (TPM): Limit 30000, Requested 45000. Reduce the input."
    assert classify_error("Request too large for gpt-4o in organization org-x " + too_large) == (
        "request_too_large"
    )
    assert classify_error("Rate limit reached for gpt-4o " + too_large) == "request_too_large"
    busy = "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, "
    assert classify_error(busy + "Requested 3000. Please try again in 4s.") == "rate_limit"


def test_reduce_the_length_is_an_overflow_unless_a_content_filter_says_it() -> None:
    groq = "Please reduce the length of the messages or completion."
    assert classify_error(groq, 400) == "overflow"
    filtered = groq + " code: content_filter (the prompt triggered the content management policy)"
    assert classify_error(filtered, 400) == "other"
    assert classify_error("Please reduce the length of the messages. Service unavailable") == (
        "transient"
    )


def test_an_output_reservation_that_fills_the_window_is_a_setting_not_an_overflow() -> None:
    text = "This model's maximum context length is {limit} tokens. However, you requested {total} "
    text += "tokens ({prompt} in the messages, {out} in the completion)."
    assert classify_error(text.format(limit=8192, total=9200, prompt=8200, out=1000)) == "overflow"
    assert classify_error(text.format(limit=4097, total=10057, prompt=57, out=10000)) == "other"
    vllm = "'max_tokens' or 'max_completion_tokens' is too large: {out}. This model's maximum "
    vllm += "context length is 4096 tokens and your request has {prompt} input tokens"
    assert classify_error(vllm.format(out=512, prompt=3700)) == "overflow"
    assert classify_error(vllm.format(out=8000, prompt=2778)) == "other"


def test_token_limit_words_alone_do_not_make_an_overflow() -> None:
    assert classify_error("500 Internal Server Error: token limit reached", 500) == "transient"
    assert classify_error("Daily token limit reached. Upgrade your plan.") == "quota"
    assert classify_error("image exceeds 5 MB maximum: 6000000 bytes > 5242880 bytes") == "other"
    assert classify_error("Tool name exceeds maximum length of 64 characters", 400) == "other"


def test_exceptions_are_classified_by_text_first_then_class_and_status() -> None:
    class ContextWindowExceededError(Exception):
        pass

    class RateLimitError(Exception):
        pass

    class AuthenticationError(Exception):
        pass

    class InternalServerError(Exception):
        pass

    class APIConnectionError(Exception):
        pass

    missing_key = (
        "OpenAIException - Missing credentials. Please pass an `api_key`, or set the "
        "`OPENAI_API_KEY` environment variable."
    )
    assert classify_error(ContextWindowExceededError("whatever")) == "overflow"
    assert classify_error(RateLimitError("slow down")) == "rate_limit"
    assert classify_error(RateLimitError("You exceeded your current quota")) == "quota"
    assert classify_error(AuthenticationError("nope")) == "auth"
    assert classify_error(InternalServerError(missing_key)) == "auth"
    assert classify_error(APIConnectionError(missing_key)) == "auth"
    assert classify_error(InternalServerError("boom")) == "transient"
    assert classify_error(APIConnectionError("Connection error.")) == "transient"
    assert classify_error(InternalServerError("prompt is too long: 5 tokens > 4 maximum")) == (
        "overflow"
    )
    assert classify_error(provider_error(413, "")) == "overflow"
    assert classify_error(provider_error(401, "bad key")) == "auth"
    assert classify_error(provider_error(402, "")) == "quota"
    assert classify_error(provider_error(529, "Overloaded")) == "transient"
    assert classify_error(provider_error(404, "no such model")) == "other"


RETRY_CASES = [
    ("rate limit", "Rate limit exceeded, please retry after 30 seconds.", True),
    ("overload", "The engine is currently overloaded, please try again later", True),
    ("timeout", "Request timed out.", True),
    ("overflow", "prompt is too long: 213462 tokens > 200000 maximum", False),
    ("auth", "Incorrect API key provided: sk-abc***.", False),
    ("quota", "You exceeded your current quota, please check your plan and billing.", False),
    (
        "too large",
        "Request too large for gpt-4o on tokens per min (TPM): Limit 3, Requested 4.",
        False,
    ),
    ("other", "The model `gpt-9` does not exist or you do not have access to it.", False),
]


def test_litellm_exceptions_as_litellm_raises_them() -> None:
    from nbagent.agent.models import litellm

    module = litellm()
    where = {"model": "gpt-4o", "llm_provider": "openai"}
    missing_key = "OpenAIException - Missing credentials. Please set `OPENAI_API_KEY`."
    assert classify_error(module.InternalServerError(missing_key, **where)) == "auth"
    assert classify_error(module.APIConnectionError(missing_key, **where)) == "auth"
    assert classify_error(module.InternalServerError("OpenAIException - boom", **where)) == (
        "transient"
    )
    assert classify_error(module.Timeout("Request timed out", **where)) == "transient"
    bad_request = module.BadRequestError("Invalid value for 'tool_choice'", **where)
    assert classify_error(bad_request) == "other" and not should_retry(bad_request)
    overflow = module.ContextWindowExceededError("This model's maximum context length ...", **where)
    assert classify_error(overflow) == "overflow"
    quota = module.RateLimitError("You exceeded your current quota", **where)
    assert classify_error(quota) == "quota" and not should_retry(quota)
    tpm = "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 45000."
    assert classify_error(module.RateLimitError(tpm, **where)) == "request_too_large"
    assert should_retry(module.RateLimitError("Rate limit reached", **where))


@pytest.mark.parametrize(
    ("kind_of_text", "text", "retried"), RETRY_CASES, ids=[case[0] for case in RETRY_CASES]
)
def test_only_rate_limits_and_transient_failures_are_retried(
    kind_of_text: str, text: str, retried: bool
) -> None:
    assert should_retry(RuntimeError(text)) is retried


@pytest.mark.parametrize(
    ("reason", "usage", "overflow"),
    [
        ("model_context_window_exceeded", {}, True),  # Anthropic, Bedrock Converse, z.ai
        ("modelContextWindowExceeded", {}, True),
        ("length", {}, False),  # the output cap, not the window
        ("length", {"prompt_tokens": 7000, "completion_tokens": 1192, "window": 8192}, True),
        ("length", {"prompt_tokens": 1000, "completion_tokens": 512, "window": 8192}, False),
        ("max_tokens", {"prompt_tokens": 200, "completion_tokens": 56, "window": 256}, True),
        ("stop", {"prompt_tokens": 9000, "completion_tokens": 10, "window": 8192}, False),
        ("content_filter", {}, False),
        (None, {}, False),
        ("", {}, False),
    ],
)
def test_a_stop_reason_says_whether_the_window_ran_out(
    reason: str | None, usage: dict[str, int], overflow: bool
) -> None:
    assert is_stop_reason_overflow(reason, **usage) is overflow


def test_retry_after_is_read_from_headers() -> None:
    assert retry_after_seconds(provider_error(429, "slow down", retry_after=12)) == 12
    error = provider_error(429, "slow down")
    error.headers = {"Retry-After-Ms": "1500"}
    assert retry_after_seconds(error) == 1.5
    assert retry_after_seconds(provider_error(429, "x")) is None


def test_nbagents_own_errors_are_never_retried_whatever_their_text_says() -> None:
    from nbagent import LocalModelError
    from nbagent.agent.providers import should_retry

    assert should_retry(ConnectionError("Connection error."))
    assert not should_retry(LocalModelError("the local model's server stopped (Connection "
                                            "error.) and could not be restarted"))
