"""The real context window of a model served by a local OpenAI-compatible server.

litellm does not know the window a local server runs a model with (it is a launch
option), and a wrong one is the top cause of overflows with local models. This asks
the server itself — llama.cpp's `/props`, vLLM's `/v1/models`, LM Studio's
`/api/v0/models`, Ollama's `/api/ps` and `/api/show` — and only on a loopback or
private-network host (the user's own `api_base`). Standard library only; never raises.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# litellm prefixes that route to a local OpenAI-compatible or Ollama server; the
# server knows the model by the rest of the name.
_PROVIDER_PREFIXES = (
    "openai", "hosted_vllm", "vllm", "ollama", "ollama_chat", "lm_studio", "llamafile",
    "openai_like", "custom_openai", "text-completion-openai",
)
OLLAMA_DEFAULT_CONTEXT = 4_096  # what Ollama allocates when neither num_ctx nor a load says


def probe_window(api_base: str, model: str, *, timeout: float = 2.0) -> tuple[int, str] | None:
    """The window the server at `api_base` runs `model` with, and where that came from.

    Returns `(window, source)` — e.g. `(8192, "llama.cpp /props n_ctx")` — or None when
    the host is not loopback/private, nothing answers, or no answer names a window.
    Each endpoint is asked at most once, each with `timeout` seconds.
    """
    try:
        root = _server_root(api_base)
        if root is None:
            return None
        names = _model_names(model)
        for probe in (_llama_cpp, _vllm, _lm_studio, _ollama):
            found = probe(root, names, timeout)
            if found is not None:
                return found
    except _Unreachable:
        return None
    except Exception:  # a probe is a hint: a broken server must never break the caller
        return None
    return None


def is_local_host(host: str) -> bool:
    """True for loopback, private-network and link-local hosts (names resolved)."""
    host = host.strip("[]").lower()
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None)
        except OSError:
            return False
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    return bool(addresses) and all(
        a.is_loopback or a.is_private or a.is_link_local for a in addresses
    )


def _server_root(api_base: str) -> str | None:
    """`http://host:port[/prefix]` with a trailing `/v1` (or `/api`) removed."""
    parts = urlsplit(api_base.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if not is_local_host(parts.hostname):
        return None
    path = parts.path.rstrip("/")
    for suffix in ("/v1", "/api"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _model_names(model: str) -> tuple[str, ...]:
    """The names the server may know `model` by: as given, and without litellm's prefix."""
    names = [model]
    head, _, rest = model.partition("/")
    if rest and head in _PROVIDER_PREFIXES:
        names.append(rest)
    return tuple(names)


class _Unreachable(Exception):
    """Nothing answers there (refused, or silent past the timeout): asking the other
    endpoints would only wait longer."""


def _get_json(url: str, timeout: float, body: Mapping[str, Any] | None = None, *,
              max_bytes: int = 2_000_000) -> Any:
    """The JSON at `url` (POSTed `body` if given; at most `max_bytes` read); None for an
    HTTP error or non-JSON (the server is there, this is not its endpoint). Raises
    `_Unreachable` when nothing answers, so a hung server costs one timeout, not one per
    endpoint."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read(max_bytes))
    except urllib.error.HTTPError:
        return None  # the server is there; this endpoint is not one of its own
    except (urllib.error.URLError, OSError) as error:
        raise _Unreachable(url) from error
    except ValueError:
        return None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if value > 0 else None


def _pick(entries: Iterable[Any], names: tuple[str, ...], key: str) -> Mapping[str, Any] | None:
    """The entry whose `key` is one of `names`, else the only entry there is."""
    listed = [e for e in entries if isinstance(e, Mapping)]
    for name in names:
        for entry in listed:
            if entry.get(key) == name:
                return entry
    return listed[0] if len(listed) == 1 else None


def _llama_cpp(root: str, names: tuple[str, ...], timeout: float) -> tuple[int, str] | None:
    props = _get_json(f"{root}/props", timeout)
    if not isinstance(props, Mapping):
        return None
    settings = props.get("default_generation_settings")
    n_ctx = _positive_int(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
    if n_ctx is None:
        n_ctx = _positive_int(props.get("n_ctx"))  # older llama-server builds
    return (n_ctx, "llama.cpp /props n_ctx") if n_ctx else None


def _vllm(root: str, names: tuple[str, ...], timeout: float) -> tuple[int, str] | None:
    listing = _get_json(f"{root}/v1/models", timeout)
    data = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(data, list):
        return None
    entry = _pick(data, names, "id")
    window = _positive_int(entry.get("max_model_len")) if entry is not None else None
    return (window, "vLLM /v1/models max_model_len") if window else None


def _lm_studio(root: str, names: tuple[str, ...], timeout: float) -> tuple[int, str] | None:
    listing = _get_json(f"{root}/api/v0/models", timeout)
    data = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(data, list):
        return None
    entry = _pick(data, names, "id")
    if entry is None:
        loaded = [e for e in data if isinstance(e, Mapping) and e.get("state") == "loaded"]
        entry = loaded[0] if len(loaded) == 1 else None
    if entry is None:
        return None
    loaded_length = _positive_int(entry.get("loaded_context_length"))
    if loaded_length:
        return loaded_length, "LM Studio /api/v0/models loaded_context_length"
    most = _positive_int(entry.get("max_context_length"))
    if most:
        return most, "LM Studio /api/v0/models max_context_length (model not loaded yet)"
    return None


def _ollama(root: str, names: tuple[str, ...], timeout: float) -> tuple[int, str] | None:
    name = names[-1]  # Ollama knows its models without litellm's prefix
    listed_as = {name, name if ":" in name else f"{name}:latest"}  # "llama3" is "llama3:latest"
    running = _get_json(f"{root}/api/ps", timeout)
    models = running.get("models") if isinstance(running, Mapping) else None
    if isinstance(models, list):
        entry = next((m for m in models if isinstance(m, Mapping)
                      and listed_as & {m.get("name"), m.get("model")}), None)
        allocated = _positive_int(entry.get("context_length")) if entry is not None else None
        if allocated:
            return allocated, "Ollama /api/ps context_length (as loaded)"
    shown = _get_json(f"{root}/api/show", timeout, {"model": name})
    return _ollama_shown(shown) if isinstance(shown, Mapping) else None


def _ollama_shown(shown: Mapping[str, Any]) -> tuple[int, str] | None:
    for line in str(shown.get("parameters") or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and value.strip().isdigit() and int(value) > 0:
            return int(value), "Ollama /api/show num_ctx"
    info = shown.get("model_info")
    trained = None
    if isinstance(info, Mapping):
        trained = next((_positive_int(v) for k, v in info.items()
                        if str(k).endswith(".context_length") and _positive_int(v)), None)
    if trained is None:
        return None
    # Not loaded and no num_ctx: Ollama allocates its default, not the trained length;
    # counting on the trained length would let Ollama cut the prompt silently.
    window = min(trained, OLLAMA_DEFAULT_CONTEXT)
    return window, (f"Ollama default context (model trained for {trained:,}; set num_ctx "
                    "or OLLAMA_CONTEXT_LENGTH for more)")
