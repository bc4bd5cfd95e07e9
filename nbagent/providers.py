"""What a provider's error means, read from one table of the phrasings providers use:
`classify_error` (overflow, auth, quota, rate limit, transient, …), `is_context_overflow`,
`parse_token_limits` (the size the provider compared and its limit, from the text) and
`retry_reason` (why a failure is retried, in the words a retry line shows).
Re-exported from the agent room, where they live."""

from __future__ import annotations

from .agent.models._call import retry_reason
from .agent.providers._errors import classify_error, is_context_overflow
from .agent.providers._limits import parse_token_limits

__all__ = ["classify_error", "is_context_overflow", "parse_token_limits", "retry_reason"]
