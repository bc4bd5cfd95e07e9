"""Exact token counters, for the models whose tokenizer is at hand without a network.

`counter_for(model)` gives a text → tokens function for OpenAI models (tiktoken, from
the encoding files litellm ships) and DeepSeek chat models (the tokenizer file litellm
ships, read by `tokenizers`), and None for any other model: `estimate_tokens` is the
fallback. `http_tokenizer(url)` counts with a llama-cpp-python server's own tokenizer
(the embedded model). Tokenizers load on the first count, never at import.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._tokens import estimate_tokens

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
    A model served from a local `api_base` is whatever that server runs: None (count
    it with `http_tokenizer`).

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


def http_tokenizer(
    base_url: str, *, timeout: float = 5.0, cache_size: int = 4096, retry_after: float = 30.0
) -> TextCounter:
    """A counter that asks a llama-cpp-python server to tokenize (its own tokenizer).

    `base_url` is the server's root or its OpenAI base (`.../v1`). Counts are cached by
    a hash of the text (the `cache_size` most recent). If the server cannot be reached
    the count falls back to `estimate_tokens` and the server is not asked again for
    `retry_after` seconds, so a dead server never stalls the context meter.
    """
    return _HttpTokenizer(base_url, timeout, cache_size, retry_after)


class _HttpTokenizer:
    def __init__(self, base_url: str, timeout: float, cache_size: int, retry_after: float):
        self.root = base_url.rstrip("/").removesuffix("/v1").rstrip("/")
        self.timeout, self.cache_size, self.retry_after = timeout, cache_size, retry_after
        self.route = "/extras/tokenize/count"
        self.baseline: int | None = None  # what an empty text costs: a BOS token, or nothing
        self.down_until = 0.0
        self.cache: OrderedDict[bytes, int] = OrderedDict()
        self.lock = threading.Lock()

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self.lock:
            if key in self.cache:
                self.cache.move_to_end(key)
                return self.cache[key]
        if time.monotonic() < self.down_until:
            return estimate_tokens(text)
        try:
            if self.baseline is None:
                self.baseline = self._ask("")
            tokens = max(0, self._ask(text) - self.baseline)
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.down_until = time.monotonic() + self.retry_after
            logger.warning("tokenizer at %s unavailable (%s); estimating", self.root, error)
            return estimate_tokens(text)
        with self.lock:
            self.cache[key] = tokens
            while len(self.cache) > self.cache_size:
                self.cache.popitem(last=False)
        return tokens

    def _ask(self, text: str) -> int:
        body = json.dumps({"input": text}).encode()
        try:
            reply = _post(self.root + self.route, body, self.timeout)
        except urllib.error.HTTPError as error:
            if error.code != 404 or self.route == "/extras/tokenize":
                raise
            self.route = "/extras/tokenize"  # a server without the count route
            reply = _post(self.root + self.route, body, self.timeout)
        return int(reply["count"]) if "count" in reply else len(reply["tokens"])


def _post(url: str, body: bytes, timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        reply = json.loads(response.read())
    if not isinstance(reply, dict):
        raise ValueError(f"unexpected tokenize reply: {reply!r:.80}")
    return reply
