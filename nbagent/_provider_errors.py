"""What kind of failure a provider error is: a context overflow, a rate limit, an
auth error, or something else — from the exception (litellm's or any SDK's: its
class names and status code) or from a status code and the raw message text.

Rate limits are checked first: "exceeds the maximum usage size allowed during
peak load" (Azure, 429) and Bedrock's "Too many tokens, please wait" are
throttling, not overflow; "max_tokens: 300000 > 64000" is a configuration error.
"""

from __future__ import annotations

import re
from typing import Literal

from .compaction import parse_token_limits

ErrorKind = Literal["overflow", "rate_limit", "auth", "other"]

__all__ = [
    "ErrorKind",
    "classify_error",
    "is_context_overflow",
    "parse_token_limits",
    "retry_after_seconds",
    "status_of",
]

_OVERFLOW_CLASSES = {"ContextWindowExceededError", "ContextLengthExceededError"}
_RATE_CLASSES = {"RateLimitError"}
_AUTH_CLASSES = {"AuthenticationError", "PermissionDeniedError"}

_RATE_TEXT = re.compile(
    r"rate.?limit|too many requests|quota|peak load|please wait|throttl|tokens per min|"
    r"\bTPM\b|\bRPM\b|requests per|slow down|overloaded|resource has been exhausted",
    re.I,
)
_AUTH_TEXT = re.compile(
    r"invalid.{0,20}api.?key|incorrect api key|unauthori[sz]ed|authentication|"
    r"permission denied|invalid x-api-key|no api key|api key not valid|forbidden|"
    r"invalid subscription key|access denied",
    re.I,
)
_CONFIG_TEXT = re.compile(
    r"max_tokens\s*:?\s*\d[\d,]*\s*>\s*\d|max_tokens.{0,40}(?:too large|"
    r"exceeds|greater than|must be less)|max_output_tokens",
    re.I,
)
_OVERFLOW_TEXT = re.compile(
    r"context.?length.?exceeded|context_length|maximum context length|context window|"
    r"prompt is too long|prompt too long|input is too long|too many tokens|"
    r"input token count.*exceeds|exceeds the (?:available )?context|context size|"
    r"model token limit|token limit|maximum (?:prompt|model) length|too large for model|"
    r"longer than the maximum|reduce the length|string too long|request too large|"
    r"input length.{0,40}exceed|exceeds the limit of|tokens? > \d|context overflow|"
    r"maximum number of tokens|prompt length|context length of only|"
    r"exceed(?:s|ed)? (?:the )?max(?:imum)? (?:input|context)",
    re.I,
)


def status_of(error: BaseException) -> int | None:
    """The HTTP status an SDK exception carries, if any."""
    for attribute in ("status_code", "status", "http_status"):
        value = getattr(error, attribute, None)
        if isinstance(value, int):
            return value
    response = getattr(error, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _class_names(error: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(error).__mro__}


def classify_error(error_or_text: BaseException | str, status: int | None = None) -> ErrorKind:
    """Tell what a provider error is: "overflow", "rate_limit", "auth" or "other".

    Args:
        error_or_text: an exception (litellm's, an SDK's, any) or the raw error text.
        status: the HTTP status, when you have only the text.
    """
    if isinstance(error_or_text, BaseException):
        names = _class_names(error_or_text)
        status = status if status is not None else status_of(error_or_text)
        text = str(error_or_text)
        if names & _RATE_CLASSES:
            return "rate_limit"
        if names & _AUTH_CLASSES:
            return "auth"
        if names & _OVERFLOW_CLASSES and not _CONFIG_TEXT.search(text):
            return "overflow"
    else:
        text = error_or_text
    if status in (429, 529) or _RATE_TEXT.search(text):
        return "rate_limit"
    if status in (401, 403) or _AUTH_TEXT.search(text):
        return "auth"
    if _CONFIG_TEXT.search(text):
        return "other"
    if _OVERFLOW_TEXT.search(text):
        return "overflow"
    if status in (400, 413) and not text.strip(" {}\"'\n"):
        return "overflow"  # some gateways answer an over-long prompt with an empty 400/413
    if status == 413:
        return "overflow"
    return "other"


def is_context_overflow(error_or_text: BaseException | str, status: int | None = None) -> bool:
    """True when the provider said the prompt does not fit the model's context window."""
    return classify_error(error_or_text, status) == "overflow"


def retry_after_seconds(error: BaseException) -> float | None:
    """The Retry-After (or retry-after-ms) a provider sent with an error, in seconds."""
    for holder in (
        getattr(error, "litellm_response_headers", None),
        getattr(error, "headers", None),
        getattr(getattr(error, "response", None), "headers", None),
    ):
        if not holder:
            continue
        try:
            lowered = {str(k).lower(): str(v) for k, v in dict(holder).items()}
        except (TypeError, ValueError):
            continue
        if "retry-after-ms" in lowered:
            try:
                return max(0.0, float(lowered["retry-after-ms"]) / 1000)
            except ValueError:
                pass
        if "retry-after" in lowered:
            try:
                return max(0.0, float(lowered["retry-after"]))
            except ValueError:
                return None  # an HTTP date: let the backoff decide
    return None
