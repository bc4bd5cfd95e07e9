"""Calling a model (`models/_call`): `call_model`'s retries (a transient error is retried
and announced with the reason the classifier found, an auth error is not, the attempts are
bounded); and the summarizer built on
it (its text and cost, its time bound)."""

from __future__ import annotations

import threading

import pytest

from nbagent import CompactionFailed, RetryPolicy
from nbagent.agent.models import call_model, summarizer
from nbagent.events import EventStream, Retrying
from nbagent.providers import retry_reason
from nbagent.testing import ProviderError, ScriptedModel, provider_error, reply

NO_WAIT = RetryPolicy(sleep=lambda seconds: None)


def test_call_model_retries_a_transient_error_and_announces_each_retry() -> None:
    model = ScriptedModel([provider_error(429, "slow down", retry_after=3),
                           provider_error(503, "overloaded"), reply("done")])
    events = EventStream()
    seen: list[Retrying] = []
    events.subscribe(lambda event: seen.append(event) if isinstance(event, Retrying) else None)
    waited: list[float] = []
    policy = RetryPolicy(sleep=waited.append, max_wait_s=10.0)
    done = call_model(model, [{"role": "user", "content": "hi"}], [], policy=policy,
                      events=events)
    assert done.message["content"] == "done"
    assert [e.attempt for e in seen] == [1, 2]
    assert waited[0] == 3.0  # the provider's Retry-After, not the backoff
    assert "slow down" in seen[0].error
    model.assert_consumed()


class APITimeoutError(Exception):
    """Named as openai's and litellm's timeouts are: the class tells, not the text."""


def test_each_retry_carries_the_reason_the_classifier_found() -> None:
    """A 503 whose words contain "rate" ("generate", "moderate") is not a rate limit."""
    model = ScriptedModel([provider_error(503, "failed to generate a response"),
                           provider_error(429, "slow down"),
                           APITimeoutError("no answer from the server"),
                           provider_error(503, "the server is under moderate load"),
                           reply("done")])
    events = EventStream()
    seen: list[Retrying] = []
    events.subscribe(lambda event: seen.append(event) if isinstance(event, Retrying) else None)
    call_model(model, [{"role": "user", "content": "hi"}], [], policy=NO_WAIT, events=events)
    assert [e.reason for e in seen] == [
        "provider unavailable", "rate limit", "timed out", "provider unavailable"]
    assert "generate" in seen[0].error  # the error itself still rides along


def test_a_failure_that_is_not_retried_has_no_retry_reason() -> None:
    assert retry_reason(provider_error(401, "invalid api key")) == ""
    assert retry_reason("litellm.BadRequestError: unknown model 'gpt-9'") == ""
    assert retry_reason("Request timed out.") == "timed out"
    assert retry_reason("google.api_core.exceptions.DeadlineExceeded: 504 Deadline Exceeded") \
        == "timed out"  # the classifier's own timeout words, one table


def test_call_model_does_not_retry_an_auth_error() -> None:
    model = ScriptedModel([provider_error(401, "invalid api key"), reply("never")])
    with pytest.raises(ProviderError, match="invalid api key"):
        call_model(model, [{"role": "user", "content": "hi"}], [], policy=NO_WAIT)
    assert len(model.requests) == 1


def test_call_model_stops_after_its_attempts() -> None:
    model = ScriptedModel([provider_error(503, "busy")] * 5)
    with pytest.raises(ProviderError, match="busy"):
        call_model(model, [{"role": "user", "content": "hi"}], [],
                   policy=RetryPolicy(max_attempts=3, sleep=lambda seconds: None))
    assert len(model.requests) == 3


def test_a_summarizer_answers_with_the_models_text_and_cost_and_sends_no_tools() -> None:
    model = ScriptedModel([reply("## 1. Primary Request", cost=0.002)])
    summary = summarizer(model, NO_WAIT)([{"role": "user", "content": "summarize"}])
    assert (summary.text, summary.cost) == ("## 1. Primary Request", 0.002)
    assert model.tools_seen == [[]]


def test_a_summarizer_that_hangs_fails_the_compaction_at_its_time_bound() -> None:
    gate = threading.Event()

    def hang(messages: object) -> str:
        gate.wait(5)
        return "too late"

    summarize = summarizer(ScriptedModel([hang]), NO_WAIT, timeout=lambda: 0.2)
    try:
        with pytest.raises(CompactionFailed, match="did not answer within 0.2 s"):
            summarize([{"role": "user", "content": "summarize"}])
    finally:
        gate.set()
