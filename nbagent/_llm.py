"""The one door to litellm. Everything that needs a provider, model metadata or an
exact tokenizer comes through here; nothing else in nbagent imports litellm.

litellm is imported on first use, with `LITELLM_LOCAL_MODEL_COST_MAP=True` set
first: otherwise its import fetches a price map from the network and stalls.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any


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
