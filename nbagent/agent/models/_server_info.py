"""The real context window of a model served by a local server, and where it came from.

litellm does not know the window a local server runs a model with (it is a launch
option), and a wrong one is the top cause of overflows with local models. This asks
the server itself, through each runtime's window reader in the order of the runtime table
(`_local_runtimes.RUNTIMES`, the readers in `_window_readers`), and only on a loopback or
private-network host (the user's own `api_base`). Requests go through `_probe_http` (one
total deadline, no redirects); nothing here raises.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from ._local_runtimes import RUNTIMES
from ._probe_http import Deadline, Unreachable, client, run_bounded
from ._window_readers import Asked
from ._window_readers import ServerWindow as ServerWindow  # what a probe answers, asked here

if TYPE_CHECKING:  # loaded when a probe runs (`_probe_http`), not with nbagent
    import httpx

# litellm prefixes that route to a local OpenAI-compatible or Ollama server; the
# server knows the model by the rest of the name.
_PROVIDER_PREFIXES = (
    "openai", "hosted_vllm", "vllm", "ollama", "ollama_chat", "lm_studio", "llamafile",
    "openai_like", "custom_openai", "text-completion-openai",
)
# prefixes that name a local runtime: the window is the one it serves, never a trained
# length from litellm's map or the built-in table
RUNTIME_PREFIXES = ("ollama", "ollama_chat", "lm_studio", "hosted_vllm", "vllm", "llamafile")
# where litellm sends a runtime's requests when no api_base is given
_DEFAULT_BASES = {"ollama": ("OLLAMA_API_BASE", "http://localhost:11434"),
                  "ollama_chat": ("OLLAMA_API_BASE", "http://localhost:11434"),
                  "lm_studio": ("LM_STUDIO_API_BASE", None),
                  "hosted_vllm": ("HOSTED_VLLM_API_BASE", None)}
UNKNOWN_LOCAL_WINDOW = 4_096  # assumed for a local server that reports no window
PROBE_BUDGET_S = 2.0  # a whole window probe (every endpoint asked), at most
REQUEST_S = 1.0  # one of its requests, at most


def probe_window(api_base: str, model: str, *,
                 budget: float = PROBE_BUDGET_S) -> ServerWindow | None:
    """The window the server at `api_base` runs `model` with, and where that came from —
    e.g. `ServerWindow(8192, "llama.cpp /props n_ctx")` — or None when the host is not
    loopback/private, nothing answers within `budget` seconds, or no answer names a
    window. Each endpoint is asked at most once."""
    try:
        root = _server_root(api_base)
    except Exception:  # a malformed address is no server
        return None
    if root is None:
        return None
    names = _model_names(model)

    async def ask() -> ServerWindow | None:
        deadline = Deadline(budget, REQUEST_S)
        async with client(https=root.startswith("https:")) as http:
            try:
                return await _ask(http, root, names, deadline)
            except Unreachable:
                return None

    return run_bounded(ask, budget, None)


def runtime_base(model: str, api_base: str | None,
                 env: Mapping[str, str] | None = None) -> str | None:
    """Where the server behind `model` listens: its `api_base`, else the runtime's own
    default as litellm uses it (Ollama: `OLLAMA_API_BASE` or localhost:11434)."""
    if api_base:
        return api_base
    env = os.environ if env is None else env
    head = model.partition("/")[0]
    variable, default = _DEFAULT_BASES.get(head, (None, None))
    return (env.get(variable) if variable else None) or default


def names_runtime(model: str) -> bool:
    """True when `model`'s litellm prefix is a local runtime's (`RUNTIME_PREFIXES`)."""
    return model.partition("/")[0] in RUNTIME_PREFIXES


def is_local_address(api_base: str) -> bool:
    """True for an `api_base` on this machine or the user's network, judged without a
    name lookup (it is asked on every window question): loopback and "localhost",
    private and link-local addresses."""
    try:
        host = (urlsplit(api_base.strip()).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


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


async def _ask(http: httpx.AsyncClient, root: str, names: tuple[str, ...],
               deadline: Deadline) -> ServerWindow | None:
    asked = Asked(http, root, deadline)
    for runtime in RUNTIMES:  # in the table's order: the most certain answer first
        found = await runtime.window(asked, names)
        if found is not None:
            return found
    return None
