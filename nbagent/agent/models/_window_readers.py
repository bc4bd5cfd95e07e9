"""How each local runtime says the window it serves a model with: one reader per runtime
(`llama_cpp_window`, `vllm_window`, `lm_studio_served_window`, `ollama_window`,
`llama_cpp_python_window`), each asking that runtime's own endpoints through `Asked`, which
asks each endpoint once per probe, and the parsers discovery's own probes share
(`lm_studio_window`, `ollama_shown`). The rows of `_local_runtimes.RUNTIMES` name them;
`_server_info.probe_window` and discovery's OpenAI-compatible probe ask them in the table's
order, so each runtime's window is read in this one place. Nothing here raises but
`Unreachable` (a server that does not answer at all)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._probe_http import Deadline, get_json

if TYPE_CHECKING:  # loaded when a probe runs (`_probe_http`), not with nbagent
    import httpx

OLLAMA_DEFAULT_CONTEXT = 4_096  # Ollama's default below 24 GiB of VRAM (its context-length docs)
LLAMA_CPP_PYTHON_N_CTX = 2_048  # llama-cpp-python's server: `--n_ctx` default


@dataclass(frozen=True)
class ServerWindow:
    """The window a server runs a model with: `detail` names where the number came from;
    `assumed` when it is the runtime's default rather than a number the server reported;
    `until_loaded` when Ollama will say the real one once the model is loaded."""

    window: int
    detail: str
    assumed: bool = False
    until_loaded: bool = False


LLAMA_CPP_PYTHON_DEFAULT = ServerWindow(
    LLAMA_CPP_PYTHON_N_CTX, "llama-cpp-python's default n_ctx (its server does not say)",
    assumed=True)


def positive_int(value: Any) -> int | None:
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


def _data(answer: Any) -> list[Any]:
    data = answer.get("data") if isinstance(answer, Mapping) else None
    return data if isinstance(data, list) else []


class Asked:
    """One server's answers during one window probe: each endpoint is asked at most once,
    however many runtimes' readers read it (vLLM's and llama-cpp-python's both read
    /v1/models)."""

    def __init__(self, http: httpx.AsyncClient, root: str, deadline: Deadline,
                 known: Mapping[str, Any] | None = None) -> None:
        self.http, self.root, self.deadline = http, root, deadline
        # `known`: answers already read (discovery's listing), by path, not asked again
        self._answers: dict[tuple[str, str], Any] = {
            (path, repr(None)): answer for path, answer in (known or {}).items()}

    async def get(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        key = (path, repr(body))
        if key not in self._answers:
            self._answers[key] = await get_json(self.http, f"{self.root}{path}",
                                                self.deadline, body)
        return self._answers[key]


WindowReader = Callable[[Asked, tuple[str, ...]], Awaitable["ServerWindow | None"]]
ToolsReader = Callable[[Asked, tuple[str, ...]], Awaitable["bool | None"]]


async def llama_cpp_window(asked: Asked, names: tuple[str, ...]) -> ServerWindow | None:
    """`/props` → `default_generation_settings.n_ctx`, the only answer that is certainly
    the served window (`server: llama.cpp /props n_ctx`)."""
    return llama_cpp_props(await asked.get("/props"))


async def vllm_window(asked: Asked, names: tuple[str, ...]) -> ServerWindow | None:
    """`/v1/models` → the model's `max_model_len` (`server: vLLM /v1/models
    max_model_len`)."""
    entry = _pick(_data(await asked.get("/v1/models")), names, "id")
    window = positive_int(entry.get("max_model_len")) if entry is not None else None
    return ServerWindow(window, "vLLM /v1/models max_model_len") if window else None


async def lm_studio_served_window(asked: Asked, names: tuple[str, ...]
                                  ) -> ServerWindow | None:
    """`/api/v0/models` → `loaded_context_length`; not loaded yet: `max_context_length`,
    asked again once loaded (`server: LM Studio /api/v0/models loaded_context_length`)."""
    return _lm_studio(_data(await asked.get("/api/v0/models")), names)


async def llama_cpp_python_window(asked: Asked, names: tuple[str, ...]
                                  ) -> ServerWindow | None:
    """No endpoint says `n_ctx`: recognised by its `/v1/models` listing (`owned_by: "me"`),
    its default 2,048 is assumed (`assumed: llama-cpp-python's default n_ctx (...)`)."""
    listed = _data(await asked.get("/v1/models"))
    entry = _pick(listed, names, "id")  # the model asked about; else any model listed
    found = is_llama_cpp_python(entry) if entry is not None else any(
        is_llama_cpp_python(e) for e in listed)
    return LLAMA_CPP_PYTHON_DEFAULT if found else None


def is_llama_cpp_python(entry: Any) -> bool:
    """llama-cpp-python's `/v1/models` lists each model as owned by "me" with `permissions`."""
    return isinstance(entry, Mapping) and entry.get("owned_by") == "me" and \
        "permissions" in entry


async def llama_cpp_tools(asked: Asked, names: tuple[str, ...]) -> bool | None:
    """Whether llama.cpp's chat template takes tools: `/props` →
    `chat_template_caps.supports_tools` (a server started with `--jinja` says)."""
    props = await asked.get("/props")
    caps = props.get("chat_template_caps") if isinstance(props, Mapping) else None
    supports = caps.get("supports_tools") if isinstance(caps, Mapping) else None
    return supports if isinstance(supports, bool) else None


def llama_cpp_props(props: Any) -> ServerWindow | None:
    """llama.cpp's `/props`: `default_generation_settings.n_ctx` (older builds: `n_ctx`)."""
    if not isinstance(props, Mapping):
        return None
    settings = props.get("default_generation_settings")
    n_ctx = positive_int(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
    n_ctx = n_ctx or positive_int(props.get("n_ctx"))
    return ServerWindow(n_ctx, "llama.cpp /props n_ctx") if n_ctx else None


def _lm_studio(data: list[Any], names: tuple[str, ...]) -> ServerWindow | None:
    entry = _pick(data, names, "id")
    if entry is None:
        loaded = [e for e in data if isinstance(e, Mapping) and e.get("state") == "loaded"]
        entry = loaded[0] if len(loaded) == 1 else None
    return lm_studio_window(entry) if entry is not None else None


def lm_studio_window(entry: Mapping[str, Any]) -> ServerWindow | None:
    """LM Studio's `/api/v0/models` entry: the loaded context length, else the most the
    model can be loaded with (it loads on the first request, at that length or less)."""
    loaded = positive_int(entry.get("loaded_context_length"))
    if loaded:
        return ServerWindow(loaded, "LM Studio /api/v0/models loaded_context_length")
    most = positive_int(entry.get("max_context_length"))
    if most:
        return ServerWindow(most, "LM Studio /api/v0/models max_context_length (model not "
                            "loaded yet)", until_loaded=True)
    return None


async def ollama_window(asked: Asked, names: tuple[str, ...]) -> ServerWindow | None:
    """Loaded: `/api/ps` → `context_length`, what Ollama allocated (`server: Ollama /api/ps
    context_length (as loaded)`); else `/api/show`'s Modelfile `num_ctx` (`server: Ollama
    /api/show num_ctx (the Modelfile's)`); else Ollama's default context, 4,096, capped by
    the trained length, asked again once loaded (`assumed: Ollama's default context (...)`)."""
    name = names[-1]  # Ollama knows its models without litellm's prefix
    listed_as = {name, name if ":" in name else f"{name}:latest"}  # "llama3" is "llama3:latest"
    running = await asked.get("/api/ps")
    models = running.get("models") if isinstance(running, Mapping) else None
    if isinstance(models, list):
        entry = next((m for m in models if isinstance(m, Mapping)
                      and listed_as & {m.get("name"), m.get("model")}), None)
        allocated = positive_int(entry.get("context_length")) if entry is not None else None
        if allocated:
            return ServerWindow(allocated, "Ollama /api/ps context_length (as loaded)")
    shown = await asked.get("/api/show", {"model": name})
    return ollama_shown(shown) if isinstance(shown, Mapping) else None


def ollama_shown(shown: Mapping[str, Any]) -> ServerWindow | None:
    """From Ollama's `/api/show`: the Modelfile's `num_ctx`, else Ollama's default context
    (capped by the trained length in `model_info`) — what its OpenAI-compatible endpoint
    uses, as that endpoint cannot ask for more."""
    for line in str(shown.get("parameters") or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and value.strip().isdigit() and int(value) > 0:
            return ServerWindow(int(value), "Ollama /api/show num_ctx (the Modelfile's)")
    info = shown.get("model_info")
    trained = None
    if isinstance(info, Mapping):
        trained = next((positive_int(v) for k, v in info.items()
                        if str(k).endswith(".context_length") and positive_int(v)), None)
    if trained is None:
        return None
    # Not loaded and no num_ctx: Ollama allocates its default, not the trained length;
    # counting on the trained length would let Ollama cut the prompt silently.
    window = min(trained, OLLAMA_DEFAULT_CONTEXT)
    return ServerWindow(window, f"Ollama's default context (model trained for {trained:,}; "
                        "set OLLAMA_CONTEXT_LENGTH or num_ctx for more)", assumed=True,
                        until_loaded=True)
