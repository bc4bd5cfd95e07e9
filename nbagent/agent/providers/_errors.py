"""What kind of failure a provider error is, and whether a retry can help. Reads the
exception (litellm's or any SDK's: class names, status code) or a status and the raw text.

Kinds, and what to do about each:

    overflow           the prompt does not fit the model's window. Never retried as is: the
                       loop drops the oldest rounds (L4, limits from `parse_token_limits`) and
                       sends again, a bounded number of times. A text stating a size over a
                       limit in any phrasing of `_limits` (one table, read by both) is one.
    rate_limit         the provider asks you to slow down (429, throttling, per-minute usage).
                       Retried with backoff, honouring Retry-After (`retry_after_seconds`).
    transient          the provider or the network failed (timeouts, dropped connections,
                       5xx, 529 overloaded, a local server still loading its model).
                       Retried with backoff.
    auth               missing or rejected credentials, however wrapped (litellm reports
                       OpenAI's missing key as a server or connection error). Never retried;
                       `auth_hint` names the environment variable to set.
    quota              quota, billing or credits exhausted. Never retried: waiting a minute
                       does not help.
    request_too_large  one request is larger than a per-minute token limit by itself
                       (OpenAI/Groq "Request too large ... (TPM): Limit 30000, Requested
                       45000"). Never retried: it can never pass. Not an overflow.
    other              anything else: bad requests, unknown models, tool schemas, content
                       filters, max_tokens settings. Never retried.

The text decides before the class or the status: credentials, quota and per-minute limits
are read first; content filters and max_tokens settings are never overflows (even when they
say "reduce the length"); overflow phrasing wins over a 5xx or a connection-error wrapper.
A successful reply whose stop reason says the window ran out is `is_stop_reason_overflow`.
"""

from __future__ import annotations

import re
from typing import Literal

from ...engine._exceptions import NbagentError
from ._credentials import auth_hint
from ._limits import parse_requested_output, parse_token_limits, states_overflow

ErrorKind = Literal[
    "overflow", "rate_limit", "transient", "auth", "quota", "request_too_large", "other"
]

__all__ = [
    "ErrorKind",
    "auth_hint",
    "classify_error",
    "is_context_overflow",
    "is_stop_reason_overflow",
    "parse_token_limits",
    "retry_after_seconds",
    "should_retry",
    "status_of",
]

_RETRIED: frozenset[str] = frozenset({"rate_limit", "transient"})

_OVERFLOW_CLASSES = {"ContextWindowExceededError", "ContextLengthExceededError"}
_RATE_CLASSES = {"RateLimitError"}
_AUTH_CLASSES = {"AuthenticationError", "PermissionDeniedError", "NoCredentialsError"}
_TIMEOUT_CLASSES = {"Timeout", "APITimeoutError", "TimeoutError", "ReadTimeout", "ConnectTimeout"}
_TRANSIENT_CLASSES = _TIMEOUT_CLASSES | {
    "APIConnectionError", "ConnectionError", "ConnectError", "RemoteProtocolError",
    "ServiceUnavailableError", "InternalServerError", "BadGatewayError",
}  # fmt: skip  (not "APIError": every openai/litellm error, 400s too, derives from it)

_AUTH_TEXT = re.compile(
    r"\b[A-Z][A-Z0-9]*_(?:API_KEY|AUTH_TOKEN|ACCESS_KEY_ID)\b|api_key client option|"
    r"missing credentials|(?:invalid|incorrect|missing|no|wrong|revoked|expired)[ _-]"
    r"(?:x-)?api[ _-]?key|api[ _-]?key (?:not valid|is (?:invalid|missing|required|not set))|"
    r"didn't provide an api key|unauthori[sz]ed|authentication|invalid x-api-key|"
    r"security token included in the request is (?:invalid|expired)|unrecognizedclient|"
    r"unable to locate credentials|could not resolve authentication|default credentials|"
    r"invalid subscription key|forbidden: this key",
    re.I,
)
_QUOTA_TEXT = re.compile(
    r"insufficient[_ ](?:quota|balance|credits?|funds)|exceeded (?:your )?current quota|"
    r"quota exceeded|credit balance|requires more credits|can only afford|out of (?:credits|"
    r"budget)|billing hard limit|payment required|\b(?:daily|weekly|monthly)\b.{0,30}\blimit\b|"
    r"exceeded_current_quota|check your plan and billing",
    re.I,
)
# A provider's type names spell the same words with "_" or "-" or run them together
# (too_many_requests, TooManyRequests, RESOURCE_EXHAUSTED, ..._per_minute_...): `_SEP`
# stands between the words wherever the phrase may be one of those names.
_SEP = r"[ _-]?"
_PER_MINUTE = re.compile(
    rf"per{_SEP}minute|\bTPM\b|\bRPM\b|retry (?:in|after) \d|try again in \d|retrydelay", re.I
)
_TPM = re.compile(rf"tokens{_SEP}per{_SEP}min|\bTPM\b", re.I)
_TPM_NUMBERS = re.compile(r"limit:?\s*(\d[\d,]*).{0,40}?requested:?\s*(\d[\d,]*)", re.I | re.S)
_RATE_TEXT = re.compile(
    rf"rate{_SEP}limit|too{_SEP}many{_SEP}requests|throttl|please wait|peak{_SEP}load|"
    rf"slow{_SEP}down|resource(?: has been)?{_SEP}exhausted|tokens{_SEP}per{_SEP}(?:min|day)|"
    rf"\bTP[MD]\b|\bRP[MD]\b|requests{_SEP}per|(?:calls|requests) ?/ ?min|"
    rf"request{_SEP}limit{_SEP}reached|concurrency{_SEP}limit",
    re.I,
)
_CONTENT_FILTER = re.compile(
    r"content[_ ]?(?:filter|management polic|polic)|responsible ai|\bflagged\b|moderation|"
    r"safety (?:system|filter|polic)|jailbreak",
    re.I,
)
_MAX_TOKENS_SETTING = re.compile(
    r"(?<!\+ )\b(?:max_tokens|max_completion_tokens|max_new_tokens|max_output_tokens|"
    r"maxoutputtokens|num_predict)\W{0,3}\s*(?::\s*\d|must\b|should\b|is not supported|"
    r"is too large|cannot\b|is invalid|is greater|is less)|"
    r"unsupported parameter\W+max_tokens",
    re.I,
)
# Overflow phrasing, in families. STRONG wins over a 5xx status or a connection wrapper;
# WEAK ("too many tokens", "reduce the length ...") only counts in a text that names no
# server or network failure.
_STRONG_OVERFLOW = re.compile(
    r"context[ _-]?(?:length|window)[ _-]?(?:exceeded|exceeds|overflow)|exceed_context_size|"
    r"context (?:size|length|window|limit) (?:has been |was |is )?exceeded|"
    r"\b(?:prompt|input|request|conversation)s?(?: is| was)? too (?:long|large)\b(?!ish)|"
    r"too large for (?:the |this )?model|input is too long for requested model|"
    r"(?:exceed(?:s|ed)?|longer than|greater than|larger than|beyond)\s+(?:the\s+)?"
    r"(?:\w+'s\s+)?(?:available |configured |maximum |max |model |allowed )*"
    r"(?:context|prompt length|model length|input length|sequence length|token limit|"
    r"number of tokens allowed|allowed length)|"
    r"\b(?:prompt|input|request|messages?|tokens)\s+(?:\w+\s+){0,2}exceeds?\s+(?:the\s+)?"
    r"max(?:imum)?\s+(?:allowed\s+)?(?:length|size|limit|number of bytes)|"
    r"(?:tokens?|size|count|length)(?: of| is)?\s*\(?\d[\d,]*\)?(?:\s*tokens?)?\)?\s*exceeds?\b|"
    r"\([^()]{0,30}\d[\d,]*(?:\s*tokens?)?\)\s*(?:is |was )?(?:too long|too large|longer than|"
    r"greater than|exceeds?)\b|only supports up to|context (?:the )?overflows|"
    r"loaded with context length of only|"
    r"maximum (?:context|prompt|input|model|sequence) length (?:is|of)\s*\d|"
    r"model max length exceeded|range of input length should be|"
    r"tokens to keep from the initial prompt|\bn_keep\b.{0,20}\bn_ctx\b|"
    r"\binputs\W+(?:tokens \+ \W*max_new_tokens\W+must be|must have less than)|"
    r"sum of .{0,20}inputs.{0,40}must not exceed|"
    r"cannot exceed \d[\d,]*\W+received|current length is \d[\d,]* while limit|"
    r"configured context size|context window exceeds limit|"
    r"(?:上下文|输入|提示).{0,12}(?:超过|超出|过长|超长)",
    re.I,
)
_WEAK_OVERFLOW = re.compile(
    r"too many tokens|reduce the length of the (?:messages|prompt|input)|"
    r"token limit exceeded|exceeds? (?:the )?token limit",
    re.I,
)
_TIMEOUT_WORDS = r"timed? ?out|timeout|deadline exceeded"  # a transient failure that timed out
_TIMEOUT_TEXT = re.compile(_TIMEOUT_WORDS, re.I)
_TRANSIENT_TEXT = re.compile(
    _TIMEOUT_WORDS + r"|connection (?:error|reset|refused|aborted|closed|lost)|"
    r"disconnect|closed unexpectedly|peer closed|remote end closed|incomplete chunked|"
    r"broken pipe|socket hang up|enotfound|eai_again|getaddrinfo|overloaded|"
    r"service unavailable|temporarily unavailable|internal server error|server had an error|"
    r"internal error|bad gateway|gateway time-?out|upstream connect|crashed|"
    r"stream ended|you can retry your request|error occurred while processing|"
    # a server still loading its model (llama.cpp's 503 "Loading model", its type
    # unavailable_error; Hugging Face's "Model ... is currently loading"), also when a
    # wrapper lost the status. Not "error loading model: ...": a file that cannot load.
    r"(?<![\w ])loading model\b(?!\s*:)|\bunavailable_error\b|is currently loading\b",
    re.I,
)
_NO_BODY = re.compile(r"^\W*(?:400|413)\s*(?:status code)?\s*\(no body\)", re.I)
_STOP_REASON_OVERFLOW = re.compile(r"context[ _-]?(?:window|length)[ _-]?(?:exceeded|exhausted)")


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


def _request_too_large(text: str) -> bool | None:
    """True: one request exceeds a tokens-per-minute limit; False: a plain TPM rate limit;
    None: the text is not about a per-minute token limit."""
    if not _TPM.search(text):
        return None
    if re.search(r"request to+ large", text, re.I):
        return True
    numbers = _TPM_NUMBERS.search(text)
    if numbers is None:
        return False
    limit, requested = (int(group.replace(",", "")) for group in numbers.groups())
    return requested > limit


def _output_alone_too_big(text: str) -> bool | None:
    """Whether the output reservation by itself reaches the limit (None: not stated)."""
    output, limit = parse_requested_output(text), parse_token_limits(text)[1]
    return None if output is None or limit is None else output >= limit


def _classify_text(text: str) -> ErrorKind | None:
    if _QUOTA_TEXT.search(text) and not _PER_MINUTE.search(text):
        return "quota"
    if _AUTH_TEXT.search(text):
        return "auth"
    too_large = _request_too_large(text)
    if too_large is not None:
        return "request_too_large" if too_large else "rate_limit"
    if _RATE_TEXT.search(text) or _QUOTA_TEXT.search(text):
        return "rate_limit"
    if _CONTENT_FILTER.search(text):
        return "other"
    if _output_alone_too_big(text):
        return "other"  # the max_tokens asked for alone fills the window: history is not why
    if _STRONG_OVERFLOW.search(text) or states_overflow(text) or _NO_BODY.search(text):
        return "overflow"
    if _MAX_TOKENS_SETTING.search(text):
        return "other"
    if _WEAK_OVERFLOW.search(text) and not _TRANSIENT_TEXT.search(text):
        return "overflow"
    return None


def classify_error(error_or_text: BaseException | str, status: int | None = None) -> ErrorKind:
    """Tell what a provider error is: one of `ErrorKind` (see the module docstring).

    Args:
        error_or_text: an exception (litellm's, an SDK's, any) or the raw error text.
        status: the HTTP status, when you have only the text.
    """
    names: set[str] = set()
    if isinstance(error_or_text, BaseException):
        names = _class_names(error_or_text)
        status = status if status is not None else status_of(error_or_text)
        text = str(error_or_text)
    else:
        text = error_or_text
    kind = _classify_text(text)
    if kind is not None:
        return kind
    if names & _OVERFLOW_CLASSES:
        return "overflow"
    if names & _RATE_CLASSES or status == 429:
        return "rate_limit"
    if names & _AUTH_CLASSES or status in (401, 403):
        return "auth"
    if status == 402:
        return "quota"
    if status == 413 or (status == 400 and not text.strip(" {}\"'\n")):
        return "overflow"  # some gateways answer an over-long prompt with an empty 400/413
    if (
        status in (408, 409, 425)
        or (status is not None and status >= 500)
        or names & _TRANSIENT_CLASSES
        or _TRANSIENT_TEXT.search(text)
    ):
        return "transient"
    return "other"


def is_timeout(error_or_text: BaseException | str) -> bool:
    """Whether a failure was a timeout (by its class or its words): the kind of transient
    failure a retry line names apart."""
    if isinstance(error_or_text, BaseException) and _class_names(error_or_text) & _TIMEOUT_CLASSES:
        return True
    return bool(_TIMEOUT_TEXT.search(str(error_or_text)))


def is_context_overflow(error_or_text: BaseException | str, status: int | None = None) -> bool:
    """True when the provider said the prompt does not fit the model's context window."""
    return classify_error(error_or_text, status) == "overflow"


def should_retry(error: BaseException) -> bool:
    """Worth sending again unchanged: rate limits and transient failures only. nbagent's
    own errors (the embedded model's server that could not be kept alive, a broken
    install) already say what happened: never retried."""
    return not isinstance(error, NbagentError) and classify_error(error) in _RETRIED


def is_stop_reason_overflow(
    finish_reason: str | None,
    *,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    window: int | None = None,
) -> bool:
    """True when a *successful* reply stopped because the context window ran out, not
    because it reached its output cap: the reply was cut, so recover and continue.

    Anthropic (and Bedrock's Converse API, z.ai) say so with the stop reason
    "model_context_window_exceeded". litellm folds that into "length", the same reason
    as an output cap, so for "length" pass the reply's usage and the window: when
    prompt + completion reached the window, the window stopped it. "length" alone, or
    any other reason, is not an overflow.
    """
    if not finish_reason:
        return False
    reason = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", finish_reason).lower()
    if _STOP_REASON_OVERFLOW.search(reason):
        return True
    if reason in ("length", "max_tokens") and window and prompt_tokens is not None:
        return prompt_tokens + (completion_tokens or 0) >= window
    return False


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
