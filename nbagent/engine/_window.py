"""Which context window a model has, and where that number came from.

Order: `NBAGENT_MAX_CONTEXT_TOKENS` → a `[1m]` suffix → a limit the server showed (stated
in an overflow error, or the most it read of a prompt it cut: "learned") → what the model
object or its server reports ("server") → a conservative window for a local server that
reports none ("assumed") → a model-info lookup (the agent passes litellm's) → the
built-in table below (longest match wins) → 200,000. A limit the server showed also caps a
larger configured window: what the server does is the truth. This module is engine: it
never reaches litellm itself. Thresholds derived from the window live in `_thresholds`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._settings import EngineSettings

WindowKind = Literal["env", "suffix", "learned", "server", "assumed", "litellm", "table",
                     "default"]
# What the meter names: a kind, or "kind: detail" where the detail says more (the server's
# endpoint, the runtime default assumed, the configured window a stated limit capped).
WindowSource = str
DEFAULT_WINDOW = 200_000
ONE_MILLION = 1_000_000
_SUFFIX_1M = re.compile(r"\[1m\]\s*$", re.IGNORECASE)

# (context window, max output tokens) by model-name key. A key matches at the start
# of a name segment (after "/", ".", ":" or the start) and must end at a separator,
# so "o1" never matches inside "gpt-4o1-preview" and "gpt-4" not inside "gpt-4o".
MODEL_TABLE: dict[str, tuple[int, int]] = {
    "claude": (200_000, 8_192),
    "claude-3": (200_000, 4_096),
    "claude-3-5": (200_000, 8_192),
    "claude-3-7": (200_000, 64_000),
    "claude-sonnet-4": (200_000, 64_000),
    "claude-opus-4": (200_000, 32_000),
    "claude-haiku-4": (200_000, 64_000),
    "gpt-3.5-turbo": (16_385, 4_096),
    "gpt-4": (8_192, 8_192),
    "gpt-4-32k": (32_768, 8_192),
    "gpt-4-turbo": (128_000, 4_096),
    "gpt-4o": (128_000, 16_384),
    "gpt-4o-mini": (128_000, 16_384),
    "gpt-4.1": (1_047_576, 32_768),
    "gpt-5": (272_000, 128_000),
    "o1": (200_000, 100_000),
    "o1-mini": (128_000, 65_536),
    "o3": (200_000, 100_000),
    "o3-mini": (200_000, 100_000),
    "o4-mini": (200_000, 100_000),
    "gemini": (1_048_576, 8_192),
    "gemini-1.5-flash": (1_048_576, 8_192),
    "gemini-1.5-pro": (2_097_152, 8_192),
    "gemini-2.0-flash": (1_048_576, 8_192),
    "gemini-2.5": (1_048_576, 65_536),
    "deepseek": (128_000, 8_192),
    "deepseek-chat": (128_000, 8_192),
    "deepseek-reasoner": (128_000, 64_000),
    "llama2": (4_096, 4_096),
    "llama-2": (4_096, 4_096),
    "llama3": (8_192, 4_096),
    "llama-3": (8_192, 4_096),
    "llama3.1": (131_072, 4_096),
    "llama-3.1": (131_072, 4_096),
    "llama3.2": (131_072, 4_096),
    "llama-3.2": (131_072, 4_096),
    "llama-3.3": (131_072, 32_768),
    "llama3.3": (131_072, 32_768),
    "qwen": (32_768, 8_192),
    "qwen2.5": (32_768, 8_192),
    "qwen-2.5": (32_768, 8_192),
    "qwen3": (40_960, 16_384),
    "mistral": (32_768, 8_192),
    "mistral-large": (131_072, 8_192),
    "mistral-small": (32_768, 8_192),
    "mixtral": (32_768, 8_192),
    "codestral": (256_000, 8_192),
}


@dataclass(frozen=True)
class WindowInfo:
    """A model's context window (`raw_window`), its maximum output, and their sources.
    `source` is what the meter names: the kind (`kind`), with a detail after ": " where
    there is one ("server: llama.cpp /props n_ctx")."""

    model: str
    raw_window: int
    source: WindowSource
    max_output: int | None
    max_output_source: WindowSource | None

    @property
    def kind(self) -> WindowKind:
        head = self.source.partition(":")[0]
        return next((kind for kind in KINDS if kind == head), "default")


KINDS: tuple[WindowKind, ...] = ("env", "suffix", "learned", "server", "assumed", "litellm",
                                 "table", "default")


def named_source(kind: WindowKind, detail: str | None = None) -> WindowSource:
    """The source as the meter names it: "server", or "server: llama.cpp /props n_ctx"."""
    return f"{kind}: {detail}" if detail else kind


def table_lookup(model: str) -> tuple[str, int, int] | None:
    """The longest `MODEL_TABLE` key matching `model`, with its window and max output."""
    name = model.lower()
    best: str | None = None
    for key in MODEL_TABLE:
        if (best is None or len(key) > len(best)) and re.search(
            rf"(?:^|[/.:]){re.escape(key)}(?:$|[-_.:@/\s])", name
        ):
            best = key
    if best is None:
        return None
    return (best, *MODEL_TABLE[best])


ModelInfoLookup = Callable[[str], "Mapping[str, Any] | None"]

# A small, fast model of the same provider writes summaries when none is configured.
SMALL_MODELS = {
    "anthropic/": "anthropic/claude-haiku-4-5",
    "claude": "claude-haiku-4-5",
    "openai/": "openai/gpt-4o-mini",
    "gpt-": "gpt-4o-mini",
    "gemini/": "gemini/gemini-2.0-flash",
}


def small_model_for(model: str) -> str:
    """A small model of `model`'s provider for summaries, or `model` itself."""
    for prefix, small in SMALL_MODELS.items():
        if model.startswith(prefix):
            return small
    return model


def resolve_window(
    model: str,
    *,
    settings: EngineSettings | None = None,
    model_info: ModelInfoLookup | None = None,
    reported: tuple[int | None, int | None] = (None, None),
    learned: int | None = None,
    reported_source: str | None = None,
    assumed: tuple[int, str] | None = None,
) -> WindowInfo:
    """Resolve `model`'s context window; the result says which source won.

    Args:
        model: a model name, optionally ending in `[1m]`.
        settings: defaults to `EngineSettings.from_env()` (read now, not at import).
        model_info: a model-info lookup (the agent passes litellm's); `None` skips it.
        reported: (window, max output) the model object knows of itself, if any.
        learned: a limit the server showed this session (stated in an overflow error, or
            the most it read of a prompt it cut); it also caps a larger configured window
            (`env`, `suffix`).
        reported_source: where the reported window came from (e.g. the server endpoint).
        assumed: (window, why) for a local server that reports none: used before litellm
            and the table, whose numbers are trained lengths, not the served window.
    """
    settings = EngineSettings.from_env() if settings is None else settings
    base = _SUFFIX_1M.sub("", model).strip()
    info = model_info(base) if model_info is not None else None
    info = info or {}
    row = table_lookup(base)

    window, source = _first(
        (settings.max_context_tokens, "env"),
        (ONE_MILLION if _SUFFIX_1M.search(model) else None, "suffix"),
        (learned, "learned"),
        (reported[0], named_source("server", reported_source)),
        (assumed[0] if assumed else None, named_source("assumed", assumed[1] if assumed else None)),
        (info.get("max_input_tokens"), "litellm"),
        (row[1] if row else None, "table"),
    ) or (DEFAULT_WINDOW, "default")
    if _positive(learned) and source in ("env", "suffix") and int(learned or 0) < window:
        # The provider said its limit in an error: a larger configured window would only
        # overflow again, every few turns. The source says what was capped.
        configured = ("NBAGENT_MAX_CONTEXT_TOKENS" if source == "env" else "the [1m] suffix")
        window, source = int(learned or 0), named_source(
            "learned", f"the limit the server showed, below {configured} ({window:,})")
    max_output, output_source = _first(
        (settings.model_limit, "env"),
        (reported[1], "server"),
        (info.get("max_output_tokens"), "litellm"),
        (row[2] if row else None, "table"),
    ) or (None, None)
    return WindowInfo(model, window, source, max_output, output_source)


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _first(*candidates: tuple[Any, WindowSource]) -> tuple[int, WindowSource] | None:
    """The first candidate whose value is a positive number, with its source."""
    for value, source in candidates:
        if _positive(value):
            return int(value), source
    return None
