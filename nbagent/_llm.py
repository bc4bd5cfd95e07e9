"""The one door to litellm. Everything that needs a provider, model metadata or an
exact tokenizer comes through here; nothing else in nbagent imports litellm.

litellm is imported on first use, with `LITELLM_LOCAL_MODEL_COST_MAP=True` set
first: otherwise its import fetches a price map from the network and stalls.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import tenacity

from .compaction import SummaryReply

logger = logging.getLogger("nbagent")


def litellm() -> ModuleType:
    """Import litellm offline-safe (its bundled price map, no debug banners)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as module

    module.suppress_debug_info = True
    return module


@functools.lru_cache(maxsize=256)
def _model_info(model: str) -> Mapping[str, Any] | None:
    try:
        return dict(litellm().get_model_info(model))
    except Exception:  # litellm raises a bare Exception for unmapped models
        return None


def model_info(model: str) -> Mapping[str, Any] | None:
    """litellm's metadata for `model` (window, max output, prices), or None if unknown."""
    return _model_info(model)


def count_tokens_exact(model: str, messages: Sequence[Mapping[str, Any]]) -> int:
    """Count tokens with the model's real tokenizer where litellm has one offline.

    Slow (tens of milliseconds per message list): for checks and benchmarks,
    never for the per-message hot path.
    """
    return int(litellm().token_counter(model=model, messages=list(messages)))


def _is_transient(error: BaseException) -> bool:
    """Worth retrying: rate limits, timeouts, dropped connections, 5xx and overloaded."""
    module = litellm()
    transient = (
        module.RateLimitError,
        module.Timeout,
        module.APIConnectionError,
        module.ServiceUnavailableError,
        module.InternalServerError,
    )
    if isinstance(error, module.ContextWindowExceededError):
        return False
    status = getattr(error, "status_code", None)
    return isinstance(error, transient) or status in (429, 500, 502, 503, 504, 529)


def _log_retry(state: tenacity.RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome else None
    wait = state.next_action.sleep if state.next_action else 0
    logger.warning(
        "model call failed (%s); retry %d in %.1fs",
        type(error).__name__,
        state.attempt_number,
        wait,
    )


def complete(model: str, messages: Sequence[Mapping[str, Any]], **options: Any) -> Any:
    """One chat completion through litellm, retried with backoff on transient errors only."""
    module = litellm()
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(4) | tenacity.stop_after_delay(90),
        wait=tenacity.wait_random_exponential(multiplier=1, max=20),
        retry=tenacity.retry_if_exception(_is_transient),
        before_sleep=_log_retry,
        reraise=True,
    )
    return retrying(module.completion, model=model, messages=list(messages), **options)


def cost_of(response: Any) -> float | None:
    """The response's cost in USD from litellm's price map, or None when unknown."""
    try:
        return float(litellm().completion_cost(completion_response=response))
    except Exception:  # unpriced models (local servers, proxies) raise
        return None


def summarizer(model: str, **options: Any) -> Callable[[list[dict[str, Any]]], SummaryReply]:
    """A compaction summarizer that calls `model` through this module."""

    def summarize(messages: list[dict[str, Any]]) -> SummaryReply:
        response = complete(model, messages, **options)
        text = response.choices[0].message.content or ""
        return SummaryReply(text, cost_of(response))

    return summarize
