"""Local models the user already has: a running server of a runtime of the table
(`_local_runtimes.RUNTIMES`) on its default loopback port, and
GGUF files in the usual model caches (`_gguf_files`) — each with its window and where it
came from (named as the meter names a session's), whether it supports tool calls, and the
one Python call that chats with it. Looked for once per process unless asked again, and
bounded: the servers and the caches are looked at side by side, the whole look ends
within `DISCOVERY_S` whatever listens or lies on disk, and nothing in it ever raises.
Nothing here ever switches the model: `first_run_notice` only says what was found.

    from nbagent.agent.models._discovery import find_local_models
    for found in find_local_models():
        print(found.describe(), found.call)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...engine import _figures as figures
from ...engine._window import named_source
from ._gguf import gguf_path
from ._gguf_files import WALK_S, GgufFile, cache_folders, find_gguf_files
from ._llm import ChatModel, LiteLLMModel
from ._local_runtimes import (
    DEFAULT_SERVERS,
    PROBE_S,
    RUNTIMES,
    SERVER_BUDGET_S,
    Served,
    probe_servers,
)

LOCAL_KEY = "local"  # what a local server gets as its API key (they ignore it)
GGUF_WINDOW = 8_192  # the window a found GGUF is served with by default (its RAM)
# the whole look, at most: the servers' budget and the walk's run side by side
DISCOVERY_S = max(SERVER_BUDGET_S, WALK_S) + 0.5
NOTICE = ("Found {what} on this machine{details}. The chat still uses {current}; to chat "
          "with it instead: {call}")


@dataclass(frozen=True)
class FoundModel:
    """A local model found on this machine, and how to use it."""

    name: str  # as its runtime calls it, or the GGUF's file name
    runtime: str  # the name of a row of `RUNTIMES`, or "GGUF file"
    litellm_name: str | None  # e.g. "ollama_chat/qwen2.5:7b"; None for a GGUF file
    api_base: str | None
    context_window: int | None
    window_source: str | None  # as the meter names it: "server: llama.cpp /props n_ctx"
    tools: bool | None  # supports tool calls (None: not known)
    path: Path | None = None
    size_bytes: int | None = None

    @property
    def running(self) -> bool:
        return self.path is None

    @property
    def call(self) -> str:
        """The one Python call that makes the current session chat with this model; it
        names only what `import nbagent` (or `%load_ext nbagent`) gives. A GGUF file is
        served on the embedded model's server, started at the next chat."""
        if self.path is not None:
            return (f"nbagent.current().configure(model='local', local_model_path="
                    f"{str(self.path)!r}, local_n_ctx={self.served_window()})")
        return (f"nbagent.current().use_model(nbagent.LiteLLMModel({self.litellm_name!r}, "
                f"api_base={self.api_base!r}, api_key={LOCAL_KEY!r}))")

    def served_window(self) -> int:
        """The window a GGUF is served with: its trained length, at most 8,192 tokens."""
        return min(self.context_window or GGUF_WINDOW, GGUF_WINDOW)

    def model(self) -> ChatModel:
        """The model as a chat model (a GGUF's server starts on its first request)."""
        if self.path is not None:
            from ._embedded import EmbeddedModel
            from ._local_model import REPLY_TOKENS

            return EmbeddedModel(self.served_window(), REPLY_TOKENS, path=str(self.path))
        assert self.litellm_name is not None
        # no window given: the session asks the server itself at its first chat, so the
        # number is fresh (Ollama's changes when it loads the model) and its source named
        return LiteLLMModel(self.litellm_name, api_base=self.api_base, api_key=LOCAL_KEY)

    def describe(self) -> str:
        """"qwen2.5:7b on Ollama (window 32,768 tokens from server: Ollama /api/ps
        context_length (as loaded), tool calls)"."""
        where = f"on {self.runtime}" if self.running else f"({self.path})"
        window = figures.tokens(self.context_window or 0)
        facts = [(f"window {window} from {self.window_source}" if self.window_source
                  else f"window {window}")
                 if self.context_window else "window unknown"]
        if self.tools is not None:
            facts.append("tool calls" if self.tools else "no tool calls")
        return f"{self.name} {where} ({', '.join(facts)})"


def _from_served(served: Served) -> FoundModel:
    window = served.window
    source = None if window is None else named_source(
        "assumed" if window.assumed else "server", window.detail)
    return FoundModel(served.model_id, served.runtime, served.litellm_name, served.api_base,
                      window.window if window else None, source, served.tools,
                      size_bytes=served.size_bytes)


def _from_file(found: GgufFile) -> FoundModel:
    return FoundModel(found.path.name, "GGUF file", None, None, found.context_length,
                      "GGUF metadata (trained length)" if found.context_length else None,
                      found.tools, path=found.path, size_bytes=found.size_bytes)


def _embedded_default() -> list[Path]:
    try:
        return [gguf_path()]
    except Exception:  # not installed, or broken: nothing to leave out
        return []


def discover(servers: Mapping[str, str] = DEFAULT_SERVERS,
             folders: Sequence[Path] | None = None, *, timeout: float = PROBE_S
             ) -> list[FoundModel]:
    """Look now (uncached): the servers probed at once while the GGUF caches are walked in
    a thread; returns within `DISCOVERY_S` (a walk still running by then — a hung network
    disk — is left behind with what it found so far) and never raises."""
    files: list[GgufFile] = []

    def walk() -> None:
        try:
            find_gguf_files(cache_folders() if folders is None else folders,
                            skip=_embedded_default(), into=files)
        except Exception:  # a cache that breaks the walk loses the rest of the walk only
            return

    started = time.monotonic()
    walker = threading.Thread(target=walk, name="nbagent-gguf-walk", daemon=True)
    walker.start()
    try:
        served = probe_servers(servers, timeout)
    except ValueError:
        raise  # a non-loopback server was asked for: the caller's mistake, said at once
    except Exception:
        served = []
    walker.join(max(0.0, DISCOVERY_S - (time.monotonic() - started)))
    return [_from_served(s) for s in served] + [_from_file(f) for f in list(files)]


class LocalModels(list[FoundModel]):
    """The local models found (a list), with when they were looked for and whether this
    answer was kept from an earlier look (`cached`)."""

    def __init__(self, found: Iterable[FoundModel], looked_at: float, cached: bool) -> None:
        super().__init__(found)
        self.looked_at = looked_at  # time.time() of the look
        self.cached = cached

    @property
    def looked_for(self) -> str:
        """Where the look looked, in words (for "nothing found"): the runtime table's
        names, so a new runtime is named without a word changed here."""
        runtimes = ", ".join(r.name for r in RUNTIMES)
        return f"{runtimes} on their default ports; GGUF files in the usual caches"


_found: list[FoundModel] | None = None
_looked_at = 0.0
_looking = threading.Lock()


def find_local_models(*, refresh: bool = False) -> LocalModels:
    """The local models on this machine: running servers first, then GGUF files. Looked
    for once per process (all servers at once, within a bounded time); `refresh` looks
    again. The answer says whether it was `cached` and when it was looked for."""
    global _found, _looked_at
    with _looking:
        cached = _found is not None and not refresh
        if not cached:
            _found = discover()
            _looked_at = time.time()
        return LocalModels(_found or [], _looked_at, cached)


def best(found: Sequence[FoundModel]) -> FoundModel | None:
    """The one to suggest: tool calls known to work, then a running server (no loading),
    then the larger model."""
    if not found:
        return None
    return max(found, key=lambda f: (f.tools is True, f.tools is not False, f.running,
                                     f.size_bytes or 0, f.context_window or 0))


def first_run_notice(found: Sequence[FoundModel], current: str = "the embedded SmolLM2-135M"
                     ) -> str | None:
    """One notice naming the best model found and the call that uses it; None if nothing
    was found. It never switches: the user decides."""
    chosen = best(found)
    if chosen is None:
        return None
    others = len(found) - 1
    details = f" ({others} more: nbagent.find_local_models())" if others > 0 else ""
    return NOTICE.format(what=chosen.describe(), details=details, current=current,
                         call=chosen.call)
