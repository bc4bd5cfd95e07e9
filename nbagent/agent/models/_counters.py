"""Exact token counters, for the models whose tokenizer is at hand without a network.

`counter_for(model)` gives a text → tokens function for OpenAI models (tiktoken, from
the encoding files litellm ships) and DeepSeek chat models (the tokenizer file litellm
ships, read by `tokenizers`), and None for any other model: `estimate_tokens` is the
fallback. The embedded model counts with its own chat template and tokenizer
(`nbagent.local`). Tokenizers load on the first count, never at import.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

logger = logging.getLogger("nbagent")
TextCounter = Callable[[str], int]

# Model names (after any "provider/" route) by tiktoken encoding: GPT-4o and everything
# since (4.1, 4.5, 5, the o-series, gpt-oss) use o200k_base; GPT-4 and 3.5 cl100k_base.
_O200K = re.compile(r"(?:chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o[1-9])(?:[-.:_@]|$)")
_CL100K = re.compile(r"(?:gpt-4|gpt-3\.5|gpt-35)(?:[-.:_@]|$)")
# DeepSeek's V3-family models (V3, R1, chat, reasoner); litellm ships their tokenizer.
# Not the R1 "distill" models: those are Qwen and Llama models with their own tokenizers.
_DEEPSEEK = re.compile(r"deepseek[-_](?:chat|reasoner|v3|r1)(?:[-.:_@]|$)")
_DISTILLED = re.compile(r"distill|:\d|[-_]\d+(?:\.\d+)?b(?:[-_.]|$)")
_TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
# litellm routes to runtimes on this machine, which serve their own builds of a model.
_LOCAL_ROUTES = {"ollama", "ollama_chat", "lm_studio", "llamafile", "local"}


def counter_for(model: str, *, api_base: str | None = None) -> TextCounter | None:
    """The exact text counter for `model` (litellm's naming), or None if there is none.

    Exact means the provider's own tokenizer, available offline: OpenAI models through
    tiktoken and DeepSeek V3/R1 through the tokenizer file litellm bundles. litellm's
    other bundled tokenizer (an old Claude one) does not match today's Claude models,
    and its Llama and Cohere tokenizers are downloads, so those models get None.
    A model served from a local `api_base` is whatever that server runs: None (the
    estimate, calibrated by the server's real usage).

    Nothing is imported or read here; the tokenizer loads on the first count.
    """
    route, _, name = model.lower().rpartition("/")
    if route.split("/")[0] in _LOCAL_ROUTES:
        return None
    if api_base and (urlsplit(api_base).hostname or "").lower() in _LOCAL_HOSTS:
        return None
    name = name.removeprefix("ft:")
    if _O200K.match(name):
        return _tiktoken_counter("o200k_base")
    if _CL100K.match(name):
        return _tiktoken_counter("cl100k_base")
    if _DEEPSEEK.match(name) and not _DISTILLED.search(name):
        return _deepseek_counter()
    return None


def _litellm_tokenizers() -> Path | None:
    """litellm's folder of bundled tokenizer files, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"


def _tiktoken_counter(encoding: str) -> TextCounter | None:
    """A counter for a tiktoken encoding, or None if using it could reach the network.

    tiktoken reads its files from TIKTOKEN_CACHE_DIR (by the SHA-1 of their URL) and
    downloads what is missing; pointing it at litellm's folder keeps it offline.
    """
    if importlib.util.find_spec("tiktoken") is None:
        return None
    bundled = _litellm_tokenizers()
    if bundled is not None and "DATA_GYM_CACHE_DIR" not in os.environ:
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    # the folder tiktoken will read, in its own order of precedence
    folder = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR", ""))
    key = hashlib.sha1(_TIKTOKEN_URL.format(encoding).encode()).hexdigest()
    if not folder or not (Path(folder) / key).is_file():
        return None

    def count(text: str) -> int:
        return len(_tiktoken_encoding(encoding).encode_ordinary(text)) if text else 0

    return count


@functools.cache
def _tiktoken_encoding(name: str) -> Any:
    import tiktoken

    return tiktoken.get_encoding(name)


def _deepseek_counter() -> TextCounter | None:
    bundled = _litellm_tokenizers()
    path = bundled / "deepseek_tokenizer.json" if bundled is not None else None
    if path is None or not path.is_file() or importlib.util.find_spec("tokenizers") is None:
        return None

    def count(text: str) -> int:
        if not text:
            return 0
        return len(_hf_tokenizer(str(path)).encode(text, add_special_tokens=False).ids)

    return count


@functools.cache
def _hf_tokenizer(path: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(path)
