"""The local runtimes as one table (`RUNTIMES`: name, default port, discovery probe, window
reader, how it is given a larger window), and the probes for the servers a user may
already run, on each runtime's default loopback port (docs/models.md's table is generated
from the rows). Each probe asks the server's own listing endpoints and answers the models
it offers, with their window (and where it came from) and tool support when the server
says. All probes run at once, each within its own total budget (`SERVER_BUDGET_S`), so
the whole look is bounded whatever listens on those ports. Only loopback addresses are
ever asked, and no redirect is followed (`_probe_http`)."""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ._probe_http import Deadline, client, gather_bounded, get_json, run_bounded
from ._window_readers import (
    Asked,
    ServerWindow,
    ToolsReader,
    WindowReader,
    llama_cpp_python_window,
    llama_cpp_tools,
    llama_cpp_window,
    lm_studio_served_window,
    lm_studio_window,
    ollama_shown,
    ollama_window,
    positive_int,
    vllm_window,
)

PROBE_S = 0.3  # one request of a probe, at most (connect, headers and body together)
SERVER_BUDGET_S = 1.0  # everything asked of one server, at most (all servers at once)
MAX_SHOWN = 16  # Ollama models asked about (/api/show), at most
MAX_LISTING_BYTES = 4_000_000  # read of one listing, at most


@dataclass(frozen=True)
class Served:
    """One model a running server offers."""

    runtime: str
    model_id: str  # as the server names it
    litellm_name: str
    api_base: str
    window: ServerWindow | None
    tools: bool | None  # supports tool calls (None: the server does not say)
    size_bytes: int | None = None


if TYPE_CHECKING:  # loaded when a probe runs (`_probe_http`), not with nbagent
    import httpx

Probe = Callable[["httpx.AsyncClient", str, Deadline], Awaitable[list[Served]]]


async def _json(http: httpx.AsyncClient, url: str, deadline: Deadline,
                body: Mapping[str, Any] | None = None) -> Any:
    return await get_json(http, url, deadline, body, max_bytes=MAX_LISTING_BYTES)


def _entries(answer: Any, key: str) -> list[Mapping[str, Any]]:
    listed = answer.get(key) if isinstance(answer, Mapping) else None
    return [e for e in listed if isinstance(e, Mapping) and isinstance(e.get(
        "name" if key == "models" else "id"), str)] if isinstance(listed, list) else []


async def probe_ollama(http: httpx.AsyncClient, root: str, deadline: Deadline) -> list[Served]:
    import asyncio  # loaded by the probe loop already (`_probe_http`)

    named = _entries(await _json(http, f"{root}/api/tags", deadline), "models")
    running = _entries(await _json(http, f"{root}/api/ps", deadline), "models") if named \
        else []
    loaded = {str(m["name"]): positive_int(m.get("context_length")) for m in running}
    limit = asyncio.Semaphore(4)

    def listed(entry: Mapping[str, Any], window: ServerWindow | None = None,
               tools: bool | None = None) -> Served:
        name = str(entry["name"])
        return Served("Ollama", name, f"ollama_chat/{name}", root, window, tools,
                      positive_int(entry.get("size")))

    async def show(entry: Mapping[str, Any]) -> Served | None:
        name = str(entry["name"])
        async with limit:
            shown = await _json(http, f"{root}/api/show", deadline, {"model": name})
        allocated = loaded.get(name)
        window = (ServerWindow(allocated, "Ollama /api/ps context_length (as loaded)")
                  if allocated else ollama_shown(shown) if isinstance(shown, Mapping) else None)
        capabilities = shown.get("capabilities") if isinstance(shown, Mapping) else None
        tools = ("tools" in capabilities) if isinstance(capabilities, list) else None
        return listed(entry, window, tools)

    # an /api/show that does not answer in time costs that model's details, not the list
    entries = named[:MAX_SHOWN]
    shown = await gather_bounded([show(e) for e in entries], deadline.remaining(), None)
    return [found or listed(entry) for found, entry in zip(shown, entries, strict=True)]


async def probe_lm_studio(http: httpx.AsyncClient, root: str,
                          deadline: Deadline) -> list[Served]:
    native = await _json(http, f"{root}/api/v0/models", deadline)
    if isinstance(native, Mapping) and isinstance(native.get("data"), list):
        found = []
        for entry in _entries(native, "data"):
            if entry.get("type") not in (None, "llm", "vlm"):
                continue  # embedding models cannot chat
            capabilities = entry.get("capabilities")
            tools = ("tool_use" in capabilities) if isinstance(capabilities, list) else None
            found.append(Served("LM Studio", entry["id"], f"openai/{entry['id']}",
                                f"{root}/v1", lm_studio_window(entry), tools))
        return found
    listing = await _json(http, f"{root}/v1/models", deadline)
    return [Served("LM Studio", e["id"], f"openai/{e['id']}", f"{root}/v1", None, None)
            for e in _entries(listing, "data")]


def openai_compatible(runtime: str) -> Probe:
    """A probe for a port where an OpenAI-compatible server usually listens (`runtime`):
    each model its `/v1/models` lists is named by the first row behind such a listing (an
    `owned_by`) whose window reader answers for it, in the table's order — the readers the
    session's window probe asks, so no window is parsed twice —, else by the row its
    `owned_by` names, else `runtime`, with no window."""

    async def probe(http: httpx.AsyncClient, root: str, deadline: Deadline) -> list[Served]:
        listing = await _json(http, f"{root}/v1/models", deadline)
        listed = _entries(listing, "data")
        if not listed:
            return []
        asked = Asked(http, root, deadline, known={"/v1/models": listing})
        listers = [row for row in RUNTIMES if row.owned_by is not None]
        found = []
        for entry in listed:
            names = (str(entry["id"]),)
            row, window = await _first_answer(listers, asked, names)
            row = row or next((r for r in listers if r.owned_by == entry.get("owned_by")),
                              None)
            tools = await row.tools(asked, names) if row and row.tools else None
            found.append(Served(row.name if row else runtime, entry["id"],
                                f"openai/{entry['id']}", f"{root}/v1", window, tools))
        return found

    return probe


async def _first_answer(rows: list[Runtime], asked: Asked, names: tuple[str, ...]
                        ) -> tuple[Runtime | None, ServerWindow | None]:
    for row in rows:
        window = await row.window(asked, names)
        if window is not None:
            return row, window
    return None, None


@dataclass(frozen=True)
class Runtime:
    """One local runtime: the only place it is named. Discovery probes each row that has a
    `port` with its `probe`; a session asks each row's `window` reader in the table's order
    (`_server_info.probe_window`) until one answers. Adding a runtime is one row here, its
    reader (and its probe, unless an existing probe recognises it), and its stub in
    tests/agent/models/test_local_runtimes.py."""

    name: str
    port: int | None  # where it listens by default (None: found on another row's port)
    probe: Probe | None  # discovery's look at that port (None: another row's probe names it)
    window: WindowReader  # the window it serves a model with, from its own endpoints
    context_setting: str = ""  # how a user gives it a larger window ({n}: the tokens)
    # what its OpenAI-compatible `/v1/models` says owns a model: a row with one is found
    # by `openai_compatible` probes, which ask its `window` reader of each model listed
    owned_by: str | None = None
    tools: ToolsReader | None = None  # whether a model takes tools, if its server says


# The order is the window probe's: the most certain answer first (llama.cpp's /props is the
# served n_ctx; llama-cpp-python's row only assumes its default, so it comes last).
RUNTIMES: tuple[Runtime, ...] = (
    Runtime("llama.cpp server", 8080, openai_compatible("llama.cpp server"), llama_cpp_window,
            "llama-server -c {n}", owned_by="llamacpp", tools=llama_cpp_tools),
    Runtime("vLLM", 8000, openai_compatible("vLLM"), vllm_window,
            "vllm serve … --max-model-len {n}", owned_by="vllm"),
    Runtime("LM Studio", 1234, probe_lm_studio, lm_studio_served_window,
            "the context length in the model's load settings ({n})"),
    Runtime("Ollama", 11434, probe_ollama, ollama_window,
            "OLLAMA_CONTEXT_LENGTH={n} ollama serve, or PARAMETER num_ctx {n} in a Modelfile "
            "(its OpenAI-compatible endpoint ignores a per-request num_ctx)"),
    # its default port is vLLM's: the OpenAI-compatible probe names it by its listing
    Runtime("llama-cpp-python server", None, None, llama_cpp_python_window,
            "python -m llama_cpp.server --n_ctx {n}", owned_by="me"),
)
DEFAULT_SERVERS = {  # runtime -> where it listens by default
    r.name: f"http://127.0.0.1:{r.port}" for r in RUNTIMES if r.port is not None}
PROBES: dict[str, Probe] = {r.name: r.probe for r in RUNTIMES if r.probe is not None}


def context_settings(tokens: int) -> str:
    """How each runtime is given a window of `tokens`, in one line (what a notice about a
    server's window says to set), from the table."""
    return "; ".join(f"{r.name}: {r.context_setting.format(n=tokens)}" for r in RUNTIMES
                     if r.context_setting)


def describe_runtimes() -> str:
    """The table as docs/models.md shows it: each runtime, where it listens by default, and
    where its window comes from (its reader's docstring)."""
    rows = ["| runtime | default port | where the window comes from (the source the meter "
            "names) | a larger window |", "|---|---|---|---|"]
    for runtime in RUNTIMES:
        port = str(runtime.port) if runtime.port else \
            "found on another runtime's port by its listing"
        doc = " ".join((runtime.window.__doc__ or "").split())
        setting = runtime.context_setting.format(n="N")
        rows.append(f"| {runtime.name} | {port} | {doc} | {setting} |")
    return "\n".join(rows)


def is_loopback_root(root: str) -> bool:
    """Only this machine: 127.0.0.0/8, ::1 or "localhost" (never a name that resolves
    elsewhere, never another host)."""
    host = (urlsplit(root).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def probe_servers(servers: Mapping[str, str] = DEFAULT_SERVERS, timeout: float = PROBE_S,
                  budget: float = SERVER_BUDGET_S) -> list[Served]:
    """Every model the servers at `servers` (runtime -> root URL) offer, all probed at once:
    each request within `timeout` seconds, each server within `budget`, so the whole call
    returns within about `budget` whatever listens. A root that is not on this machine's
    loopback is refused (ValueError)."""
    for root in servers.values():
        if not is_loopback_root(root):
            raise ValueError(f"only loopback servers are probed, not {root}")
    jobs = [(PROBES[runtime], root.rstrip("/")) for runtime, root in servers.items()]

    async def one(probe: Probe, root: str) -> list[Served]:
        async with client(https=root.startswith("https:")) as http:
            return await probe(http, root, Deadline(budget, timeout))

    async def every() -> list[list[Served]]:
        return await gather_bounded([one(probe, root) for probe, root in jobs], budget, [])

    nothing: list[list[Served]] = []
    answers = run_bounded(every, budget + 0.5, nothing)
    return [served for answer in answers for served in answer]
