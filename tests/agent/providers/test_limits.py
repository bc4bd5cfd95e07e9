"""The size and limit a "too long" error states (`providers/_limits`), read by the public
`parse_token_limits`. The whole phrasings corpus is tests/engine/test_limits.py's."""

from __future__ import annotations

from nbagent.providers import parse_token_limits


def test_parse_token_limits_is_public() -> None:
    assert parse_token_limits("prompt is too long: 213462 tokens > 200000 maximum") == (
        213_462,
        200_000,
    )
