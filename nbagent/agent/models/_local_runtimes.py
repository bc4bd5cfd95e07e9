"""Probes for the local model servers a user may already run, on their default loopback
ports: Ollama (11434), LM Studio (1234), a llama.cpp server (8080), vLLM (8000). Each
probe asks the server's own listing endpoints with a short timeout and never raises;
it answers the models the server offers, with their window and tool support when the
server says. Only 127.0.0.1 / localhost / ::1 are ever asked."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ._server_info import _get_json, _ollama_shown, _Unreachable

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
DEFAULT_SERVERS = {  # runtime -> where it listens by default
    "Ollama": "http://127.0.0.1:11434",
    "LM Studio": "http://127.0.0.1:1234",
    "llama.cpp server": "http://127.0.0.1:8080",
    "vLLM": "http://127.0.0.1:8000",
}
PROBE_S = 0.3  # each request of a probe, at most
MAX_SHOWN = 16  # Ollama models asked about (/api/show), at most
MAX_LISTING_BYTES = 4_000_000  # read of one listing, at most


@dataclass(frozen=True)
class Served:
    """One model a running server offers."""

    runtime: str
    model_id: str  # as the server names it
    litellm_name: str
    api_base: str
    context_window: int | None
    window_source: str | None
    tools: bool | None  # supports tool calls (None: the server does not say)
    size_bytes: int | None = None


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def _listed(root: str, timeout: float) -> list[Mapping[str, Any]]:
    listing = _get_json(f"{root}/v1/models", timeout, max_bytes=MAX_LISTING_BYTES)
    data = listing.get("data") if isinstance(listing, Mapping) else None
    return [e for e in data if isinstance(e, Mapping) and isinstance(e.get("id"), str)] \
        if isinstance(data, list) else []


def probe_ollama(root: str, timeout: float = PROBE_S) -> list[Served]:
    tags = _get_json(f"{root}/api/tags", timeout, max_bytes=MAX_LISTING_BYTES)
    models = tags.get("models") if isinstance(tags, Mapping) else None
    if not isinstance(models, list):
        return []
    named = [m for m in models if isinstance(m, Mapping) and isinstance(m.get("name"), str)]

    def show(entry: Mapping[str, Any]) -> Served:
        name = str(entry["name"])
        try:
            shown = _get_json(f"{root}/api/show", timeout, {"model": name},
                              max_bytes=MAX_LISTING_BYTES)
        except _Unreachable:
            shown = None
        window = _ollama_shown(shown) if isinstance(shown, Mapping) else None
        capabilities = shown.get("capabilities") if isinstance(shown, Mapping) else None
        tools = ("tools" in capabilities) if isinstance(capabilities, list) else None
        return Served("Ollama", name, f"ollama_chat/{name}", root,
                      window[0] if window else None, window[1] if window else None, tools,
                      _number(entry.get("size")))

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(show, named[:MAX_SHOWN]))


def probe_lm_studio(root: str, timeout: float = PROBE_S) -> list[Served]:
    native = _get_json(f"{root}/api/v0/models", timeout, max_bytes=MAX_LISTING_BYTES)
    data = native.get("data") if isinstance(native, Mapping) else None
    if isinstance(data, list):
        found = []
        for entry in data:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
                continue
            if entry.get("type") not in (None, "llm", "vlm"):
                continue  # embedding models cannot chat
            loaded = _number(entry.get("loaded_context_length"))
            most = _number(entry.get("max_context_length"))
            window = loaded or most
            source = ("LM Studio loaded_context_length" if loaded else
                      "LM Studio max_context_length" if most else None)
            capabilities = entry.get("capabilities")
            tools = ("tool_use" in capabilities) if isinstance(capabilities, list) else None
            found.append(Served("LM Studio", entry["id"], f"openai/{entry['id']}",
                                f"{root}/v1", window, source, tools))
        return found
    return [Served("LM Studio", e["id"], f"openai/{e['id']}", f"{root}/v1", None, None, None)
            for e in _listed(root, timeout)]


def probe_llama_cpp(root: str, timeout: float = PROBE_S) -> list[Served]:
    listed = _listed(root, timeout)
    if not listed:
        return []
    props = _get_json(f"{root}/props", timeout, max_bytes=MAX_LISTING_BYTES)
    window = tools = None
    if isinstance(props, Mapping):
        settings = props.get("default_generation_settings")
        window = _number(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
        window = window or _number(props.get("n_ctx"))
        caps = props.get("chat_template_caps")
        if isinstance(caps, Mapping) and isinstance(caps.get("supports_tools"), bool):
            tools = bool(caps["supports_tools"])
    source = "llama.cpp /props n_ctx" if window else None
    return [Served("llama.cpp server", e["id"], f"openai/{e['id']}", f"{root}/v1", window,
                   source, tools) for e in listed]


def probe_vllm(root: str, timeout: float = PROBE_S) -> list[Served]:
    return [Served("vLLM", e["id"], f"openai/{e['id']}", f"{root}/v1",
                   _number(e.get("max_model_len")),
                   "vLLM max_model_len" if _number(e.get("max_model_len")) else None, None)
            for e in _listed(root, timeout) if e.get("owned_by") in (None, "vllm")]


PROBES: dict[str, Callable[[str, float], list[Served]]] = {
    "Ollama": probe_ollama, "LM Studio": probe_lm_studio,
    "llama.cpp server": probe_llama_cpp, "vLLM": probe_vllm,
}


def probe_servers(servers: Mapping[str, str] = DEFAULT_SERVERS,
                  timeout: float = PROBE_S) -> list[Served]:
    """Every model the servers at `servers` (runtime -> root URL) offer, all probed at once.
    A root that is not on this machine's loopback is refused (ValueError)."""
    for root in servers.values():
        if (urlsplit(root).hostname or "").lower() not in LOOPBACK:
            raise ValueError(f"only loopback servers are probed, not {root}")
    jobs = [(PROBES[runtime], root.rstrip("/")) for runtime, root in servers.items()]
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        answers = list(pool.map(lambda job: _safely(job[0], job[1], timeout), jobs))
    return [served for answer in answers for served in answer]


def _safely(probe: Callable[[str, float], list[Served]], root: str,
            timeout: float) -> list[Served]:
    try:
        return probe(root, timeout)
    except _Unreachable:
        return []
    except Exception:  # a probe is a hint: a strange server never breaks the caller
        return []
