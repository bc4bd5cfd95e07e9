"""`Usage`: the token usage one model response reported, normalised across providers
(where each puts its cached part). The tracker calibrates its running count with it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Token usage of one model response, normalised across providers.

    `input_tokens` excludes the cached parts; `context_tokens` is what the
    request really occupied in the window (input + cache read + cache write).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @classmethod
    def from_response(cls, usage: Any) -> Usage:
        """Read the usage a provider reported: a dict, or an object such as litellm's.

        The prompt's size must include its cached part, and where that part sits
        depends on the shape:

        - OpenAI chat, DeepSeek and litellm (which normalises every provider to this):
          `prompt_tokens` is the whole prompt; `prompt_tokens_details.cached_tokens`
          (or `cache_read_input_tokens`, `prompt_cache_hit_tokens`) and the cache writes
          (`cache_creation_input_tokens`) are parts of it.
        - OpenAI Responses: `input_tokens` holds `input_tokens_details.cached_tokens`.
        - Gemini: `promptTokenCount` holds `cachedContentTokenCount`.
        - Anthropic: `input_tokens` excludes `cache_read_input_tokens` and
          `cache_creation_input_tokens`; Bedrock Converse likewise (`inputTokens`,
          `cacheReadInputTokens`, `cacheWriteInputTokens`).
        """

        def get(obj: Any, key: str) -> Any:
            if obj is None:
                return None
            return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)

        def number(obj: Any, *keys: str) -> int:
            for key in keys:
                value = get(obj, key)
                if isinstance(value, (int, float)) and value:
                    return int(value)
            return 0

        def inside(prompt: int, output: int, read: int, write: int) -> Usage:
            return cls(max(0, prompt - read - write), output, read, write)

        if get(usage, "prompt_tokens") is not None:
            details = get(usage, "prompt_tokens_details")
            read = number(details, "cached_tokens") or number(
                usage, "cache_read_input_tokens", "prompt_cache_hit_tokens"
            )
            write = number(usage, "cache_creation_input_tokens") or number(
                details, "cache_creation_tokens", "cache_write_tokens"
            )
            return inside(
                number(usage, "prompt_tokens"), number(usage, "completion_tokens"), read, write
            )
        if get(usage, "promptTokenCount") is not None:
            output = number(usage, "candidatesTokenCount") + number(usage, "thoughtsTokenCount")
            read = number(usage, "cachedContentTokenCount")
            return inside(number(usage, "promptTokenCount"), output, read, 0)
        if get(usage, "inputTokens") is not None:
            return cls(
                number(usage, "inputTokens"),
                number(usage, "outputTokens"),
                number(usage, "cacheReadInputTokens"),
                number(usage, "cacheWriteInputTokens"),
            )
        details = get(usage, "input_tokens_details")
        if details is not None:
            read = number(details, "cached_tokens")
            return inside(number(usage, "input_tokens"), number(usage, "output_tokens"), read, 0)
        return cls(
            number(usage, "input_tokens"),
            number(usage, "output_tokens"),
            number(usage, "cache_read_input_tokens"),
            number(usage, "cache_creation_input_tokens"),
        )
