"""What a provider's error means, where it wants cache marks and which message orders it
refuses: the agent room's door to its provider rules (`nbagent.providers` is the user's
short facade of the first part).

    _errors       what kind of failure an error is, whether to retry, after how long
    _limits       the phrasings table: the size and limit a "too long" error states
    _credentials  which variable a missing or rejected key is
    _caching      the cache families (`FAMILIES`) and the breakpoints a request carries
    _roles        the request-shape rules (`RULES`): a repair on the request's copy
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._doors import lazy_door

if TYPE_CHECKING:
    from ._caching import (
        FAMILIES,
        CachePlan,
        apply_cache_plan,
        breakpoints,
        cache_family,
        families_named,
        family_of,
        minimum_cacheable,
    )
    from ._credentials import auth_hint
    from ._errors import (
        classify_error,
        is_context_overflow,
        is_stop_reason_overflow,
        retry_after_seconds,
        should_retry,
    )
    from ._limits import parse_requested_output, parse_token_limits
    from ._roles import BRIDGE, RULES, bridged, refuses_user_after_tool, shaped

# The names load on first use, not here: `_credentials` asks the models folder's litellm
# door while the models folder's `_llm` imports `_caching`, so importing them here would
# turn that into a circle between the two packages, whichever is entered first.
_PARTS = ("._errors", "._limits", "._credentials", "._caching", "._roles")

__all__ = [
    "BRIDGE",
    "FAMILIES",
    "RULES",
    "CachePlan",
    "apply_cache_plan",
    "auth_hint",
    "breakpoints",
    "bridged",
    "cache_family",
    "classify_error",
    "families_named",
    "family_of",
    "is_context_overflow",
    "is_stop_reason_overflow",
    "minimum_cacheable",
    "parse_requested_output",
    "parse_token_limits",
    "refuses_user_after_tool",
    "retry_after_seconds",
    "shaped",
    "should_retry",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = lazy_door(globals(), _PARTS)  # see above
