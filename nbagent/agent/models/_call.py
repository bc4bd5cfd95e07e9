"""Calling a model: `call_model` retries transient failures with tenacity (`RetryPolicy`:
backoff with jitter, or the provider's Retry-After), announcing each retry with the reason
`classify_error` found, in words (`retry_reason`, one table: `RETRY_REASONS`); `summarizer`
is a compaction summarizer built on it, bounded in time. The model objects themselves live
in `_llm`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...engine._events import EventStream, Retrying
from ...engine._exceptions import CompactionFailed
from ...engine.compaction import SummaryReply
from ..providers._caching import CachePlan
from ..providers._errors import classify_error, is_timeout, retry_after_seconds, should_retry
from ._llm import ChatModel, Completion, LiteLLMModel, Message, TextCallback, takes_cache_plan

if TYPE_CHECKING:
    import tenacity

logger = logging.getLogger("nbagent")


@dataclass
class RetryPolicy:
    """How transient failures are retried: exponential backoff with jitter, or the
    provider's Retry-After when it sends one; bounded in attempts and total time."""

    max_attempts: int = 5
    max_seconds: float = 120.0
    backoff_s: float = 1.0
    max_wait_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep


# Why a call is retried, in the words a retry line shows: one row per kind `should_retry`
# retries ("timeout" is a transient failure that was a timeout).
RETRY_REASONS: dict[str, str] = {
    "rate_limit": "rate limit",
    "timeout": "timed out",
    "transient": "provider unavailable",
}


def retry_reason(error: BaseException | str) -> str:
    """Why `error` is retried, in a few words ("rate limit", "timed out", "provider
    unavailable"): `classify_error`'s kind, never a guess of our own; "" for a kind
    that is not retried."""
    kind: str = classify_error(error)
    if kind == "transient" and is_timeout(error):
        kind = "timeout"
    return RETRY_REASONS.get(kind, "")


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    import tenacity

    jitter = tenacity.wait_random_exponential(multiplier=policy.backoff_s, max=policy.max_wait_s)

    def wait(state: tenacity.RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        hinted = retry_after_seconds(error) if error is not None else None
        return min(hinted, policy.max_wait_s) if hinted is not None else float(jitter(state))

    return wait


def call_model(
    model: ChatModel,
    messages: list[Message],
    tools: list[dict[str, Any]],
    *,
    on_text: TextCallback | None = None,
    policy: RetryPolicy | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    events: EventStream | None = None,
    plan: CachePlan | None = None,
) -> Completion:
    """Call `model`, retrying transient failures (each retry announced on `events`);
    other errors propagate at once. `plan` places the prompt cache's markers for a
    litellm model that completes as `LiteLLMModel` does; other models send as they are."""
    import tenacity  # imported here: it pulls in asyncio and tornado, too slow for start-up

    policy = policy or RetryPolicy()

    def announce(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        event = Retrying(state.attempt_number, wait, f"{type(error).__name__}: {error}"[:200],
                         retry_reason(error) if error is not None else "")
        logger.info(
            "model call failed (%s); retry %d in %.1fs", event.error, event.attempt, event.wait_s
        )
        if events is not None:
            events.emit(event)

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(policy.max_attempts)
        | tenacity.stop_after_delay(policy.max_seconds),
        wait=_wait(policy),
        retry=tenacity.retry_if_exception(should_retry),
        sleep=policy.sleep,
        before_sleep=announce,
        reraise=True,
    )
    if plan is not None and takes_cache_plan(model):
        assert isinstance(model, LiteLLMModel)
        return retrying(model.send, messages, tools, on_text=on_text, tool_choice=tool_choice,
                        plan=plan)
    return retrying(model.complete, messages, tools, on_text=on_text, tool_choice=tool_choice)


def summarizer(
    model: ChatModel | str,
    policy: RetryPolicy | None = None,
    *,
    timeout: float | Callable[[], float] | None = None,
) -> Callable[[list[Message]], SummaryReply]:
    """A compaction summarizer that calls `model` through this seam.

    `timeout` (seconds, or a function giving them at call time) bounds each summary:
    a summarizer that hangs fails the compaction (the history stays as it was)
    instead of blocking the chat.
    """
    chat_model = LiteLLMModel(model) if isinstance(model, str) else model

    def call(messages: list[Message]) -> SummaryReply:
        completion = call_model(chat_model, messages, [], policy=policy)
        return SummaryReply(str(completion.message.get("content") or ""), completion.cost)

    def summarize(messages: list[Message]) -> SummaryReply:
        limit = timeout() if callable(timeout) else timeout
        if limit is None:
            return call(messages)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nbagent-summary")
        try:
            return pool.submit(call, messages).result(timeout=limit)
        except FutureTimeout:
            raise CompactionFailed(f"the summarizer did not answer within {limit:g} s",
                                   summary_calls=1) from None
        finally:
            pool.shutdown(wait=False)

    return summarize
