"""The overflow classifier on a corpus of real provider error texts (tests/data)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nbagent import classify_error, is_context_overflow, parse_token_limits
from nbagent._provider_errors import retry_after_seconds
from nbagent.testing import provider_error

CORPUS = json.loads((Path(__file__).parent / "data" / "provider_errors.json").read_text())


def test_the_corpus_has_at_least_twenty_positives_and_twenty_negatives() -> None:
    kinds = Counter(case["kind"] for case in CORPUS)
    assert kinds["overflow"] >= 20 and sum(kinds.values()) - kinds["overflow"] >= 20


@pytest.mark.parametrize(
    "case", CORPUS, ids=[f"{c['provider']}-{c['kind']}-{i}" for i, c in enumerate(CORPUS)]
)
def test_each_real_error_text_is_classified(case: dict[str, Any]) -> None:
    assert classify_error(case["text"], case["status"]) == case["kind"]
    assert is_context_overflow(case["text"], case["status"]) == (case["kind"] == "overflow")


@pytest.mark.parametrize(
    "case",
    [c for c in CORPUS if c["kind"] == "overflow" and c["text"].strip("{}")],
    ids=lambda c: c["provider"],
)
def test_overflow_texts_are_recognised_without_a_status(case: dict[str, Any]) -> None:
    assert is_context_overflow(case["text"])


def test_rate_limits_come_first() -> None:
    assert (
        classify_error("The request exceeds the maximum usage size allowed during peak load.", 429)
        == "rate_limit"
    )
    assert (
        classify_error("ThrottlingException: Too many tokens, please wait before trying again.")
        == "rate_limit"
    )
    assert classify_error("max_tokens: 300000 > 64000, which is the maximum allowed") == "other"


def test_exceptions_are_classified_by_class_name_and_status() -> None:
    class ContextWindowExceededError(Exception):
        pass

    class RateLimitError(Exception):
        pass

    class AuthenticationError(Exception):
        pass

    assert classify_error(ContextWindowExceededError("whatever")) == "overflow"
    assert classify_error(RateLimitError("prompt is too long")) == "rate_limit"
    assert classify_error(AuthenticationError("nope")) == "auth"
    assert classify_error(provider_error(413, "")) == "overflow"
    assert classify_error(provider_error(401, "bad key")) == "auth"


def test_retry_after_is_read_from_headers() -> None:
    assert retry_after_seconds(provider_error(429, "slow down", retry_after=12)) == 12
    error = provider_error(429, "slow down")
    error.headers = {"Retry-After-Ms": "1500"}
    assert retry_after_seconds(error) == 1.5
    assert retry_after_seconds(provider_error(429, "x")) is None


def test_parse_token_limits_is_public() -> None:
    assert parse_token_limits("prompt is too long: 213462 tokens > 200000 maximum") == (
        213_462,
        200_000,
    )
