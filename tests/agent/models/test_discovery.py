"""Finding the local models a user already has: a stub server of each runtime of
`RUNTIMES` on 127.0.0.1 answering its real listing endpoints, GGUF files found on
disk (their reading is `test_gguf_files`'s), and the notice that names the best one (never
a switch)."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import nbagent
from nbagent.agent.models import (
    RUNTIMES,
    EmbeddedModel,
    FoundModel,
    Runtime,
    ServerWindow,
    _discovery,
    _local_runtimes,
    best,
    discover,
    find_local_models,
    first_run_notice,
    probe_servers,
)
from nbagent.testing import ScriptedModel

from ...openai_stub import StubServer

PORTED = [row.name for row in RUNTIMES if row.port is not None]  # discovery's servers


# A probe's request to a stub that is there: the product's 0.3 s (PROBE_S, sized for
# ports where nothing listens) is too short for a thread of a busy test run to answer in,
# and these tests read what a server says, not how fast.
LIVE = 10.0


def root(stub: StubServer) -> str:
    return stub.base_url.removesuffix("/v1")


def test_ollama_models_come_with_their_window_and_tool_support() -> None:
    shown = {"qwen2.5:7b": {"capabilities": ["completion", "tools"],
                            "parameters": "num_ctx 32768\ntemperature 0.7",
                            "model_info": {"qwen2.context_length": 131072}},
             "gemma:2b": {"capabilities": ["completion"],
                          "model_info": {"gemma.context_length": 8192}}}
    info = {"/api/tags": {"models": [{"name": n, "size": 4_700_000_000} for n in shown]},
            "/api/show": lambda body: shown.get(body["model"])}
    with StubServer(info=info) as stub:
        found = {f.name: f for f in discover({"Ollama": root(stub)}, folders=[], timeout=LIVE)}
    qwen, gemma = found["qwen2.5:7b"], found["gemma:2b"]
    assert (qwen.litellm_name, qwen.api_base) == ("ollama_chat/qwen2.5:7b", root(stub))
    assert (qwen.context_window, qwen.tools) == (32768, True)
    assert qwen.window_source == "server: Ollama /api/show num_ctx (the Modelfile's)"
    assert (gemma.context_window, gemma.tools) == (4096, False)  # Ollama's default, not 8192
    assert (gemma.window_source or "").startswith("assumed: Ollama's default context")
    assert "OLLAMA_CONTEXT_LENGTH" in (gemma.window_source or "")


def test_an_ollama_model_already_loaded_has_the_context_ollama_allocated() -> None:
    info = {"/api/tags": {"models": [{"name": "llama3.1:8b"}]},
            "/api/ps": {"models": [{"name": "llama3.1:8b", "model": "llama3.1:8b",
                                    "context_length": 16384}]},
            "/api/show": {"capabilities": ["completion", "tools"],
                          "model_info": {"llama.context_length": 131072}}}
    with StubServer(info=info) as stub:
        [found] = discover({"Ollama": root(stub)}, folders=[], timeout=LIVE)
    assert (found.context_window, found.window_source) == (
        16384, "server: Ollama /api/ps context_length (as loaded)")


def test_lm_studio_lists_its_chat_models_with_the_loaded_window() -> None:
    info = {"/api/v0/models": {"data": [
        {"id": "qwen2.5-7b-instruct", "type": "llm", "state": "loaded",
         "loaded_context_length": 16384, "max_context_length": 32768,
         "capabilities": ["tool_use"]},
        {"id": "phi-3-mini", "type": "llm", "state": "not-loaded", "max_context_length": 4096},
        {"id": "nomic-embed-text", "type": "embeddings", "max_context_length": 2048}]}}
    with StubServer(info=info) as stub:
        found = {f.name: f for f in discover({"LM Studio": root(stub)}, folders=[], timeout=LIVE)}
    assert set(found) == {"qwen2.5-7b-instruct", "phi-3-mini"}  # no embedding model
    qwen = found["qwen2.5-7b-instruct"]
    assert (qwen.litellm_name, qwen.api_base) == ("openai/qwen2.5-7b-instruct", stub.base_url)
    assert (qwen.context_window, qwen.tools) == (16384, True)
    assert qwen.window_source == "server: LM Studio /api/v0/models loaded_context_length"
    assert (found["phi-3-mini"].context_window, found["phi-3-mini"].tools) == (4096, None)


def test_an_older_lm_studio_still_lists_its_models_from_v1() -> None:
    with StubServer(info={"/v1/models": {"data": [{"id": "mistral-7b"}]}}) as stub:
        [found] = discover({"LM Studio": root(stub)}, folders=[], timeout=LIVE)
    assert (found.litellm_name, found.context_window, found.tools) == (
        "openai/mistral-7b", None, None)


def test_a_llama_cpp_server_says_its_window_and_tool_support_in_props() -> None:
    info = {"/v1/models": {"data": [{"id": "qwen2.5-coder-7b-q4_k_m.gguf"}]},
            "/props": {"default_generation_settings": {"n_ctx": 8192},
                       "chat_template_caps": {"supports_tools": True}}}
    with StubServer(info=info) as stub:
        [found] = discover({"llama.cpp server": root(stub)}, folders=[], timeout=LIVE)
    assert found.runtime == "llama.cpp server" and found.api_base == stub.base_url
    assert (found.context_window, found.window_source, found.tools) == (
        8192, "server: llama.cpp /props n_ctx", True)
    assert "window 8,192 tokens from server: llama.cpp /props n_ctx" in found.describe()


def test_vllm_gives_max_model_len() -> None:
    info = {"/v1/models": {"data": [{"id": "Qwen/Qwen2.5-7B-Instruct", "owned_by": "vllm",
                                     "max_model_len": 32768}]}}
    with StubServer(info=info) as stub:
        [found] = discover({"vLLM": root(stub)}, folders=[], timeout=LIVE)
    assert (found.litellm_name, found.context_window) == ("openai/Qwen/Qwen2.5-7B-Instruct",
                                                          32768)
    assert (found.runtime, found.window_source) == ("vLLM",
                                                    "server: vLLM /v1/models max_model_len")


def test_llama_cpp_pythons_server_is_named_with_its_default_window_assumed() -> None:
    # its real /v1/models entry; it has no endpoint that says n_ctx (no /props)
    info = {"/v1/models": {"object": "list", "data": [
        {"id": "qwen", "object": "model", "owned_by": "me", "permissions": []}]}}
    with StubServer(info=info) as stub:
        [found] = discover({"vLLM": root(stub)}, folders=[], timeout=LIVE)  # its default port is 8000
    assert (found.runtime, found.context_window) == ("llama-cpp-python server", 2048)
    assert (found.window_source or "").startswith("assumed: llama-cpp-python's default n_ctx")


@pytest.mark.parametrize("row", [r for r in RUNTIMES if r.owned_by],
                         ids=[r.name for r in RUNTIMES if r.owned_by])
def test_a_listed_models_window_is_read_by_its_rows_reader_alone(
        row: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each window is read in one place: the OpenAI-compatible probe asks the rows' readers
    (those the session's window probe asks), so a reader that reads otherwise is what
    discovery says too — a second parser in the probe would not follow it."""
    said = ServerWindow(1_234, f"the {row.name} reader")

    async def reader(asked: Any, names: tuple[str, ...]) -> ServerWindow:
        return said

    rows = tuple(replace(r, window=reader) if r is row else r for r in RUNTIMES)
    monkeypatch.setattr(_local_runtimes, "RUNTIMES", rows)
    # a listing that only this row's reader knows: no /props, no max_model_len
    listing = {"/v1/models": {"data": [{"id": "m", "owned_by": row.owned_by,
                                        "permissions": []}]}}
    port = next(r.name for r in RUNTIMES if r.probe is not None and r.owned_by)
    with StubServer(info=listing) as stub:
        [found] = discover({port: root(stub)}, folders=[], timeout=LIVE)
    assert (found.runtime, found.context_window, found.window_source) == (
        row.name, 1_234, f"server: the {row.name} reader")


def test_only_loopback_servers_are_ever_probed() -> None:
    with pytest.raises(ValueError, match="only loopback"):
        probe_servers({"Ollama": "http://10.1.2.3:11434"})


def test_nothing_running_finds_nothing(tmp_path: Path) -> None:
    closed = []
    for _ in PORTED:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed.append(f"http://127.0.0.1:{sock.getsockname()[1]}")
    assert discover(dict(zip(PORTED, closed, strict=True)), folders=[tmp_path]) == []


def test_discovery_runs_once_per_process_and_says_when_it_answers_from_its_cache(
        monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[int] = []
    monkeypatch.setattr(_discovery, "_found", None)
    monkeypatch.setattr(_discovery, "discover", lambda: looks.append(1) or [])
    first, second = find_local_models(), find_local_models()
    assert first == [] and second == [] and looks == [1]
    assert (first.cached, second.cached) == (False, True)
    assert second.looked_at == first.looked_at
    again = find_local_models(refresh=True)
    assert looks == [1, 1] and not again.cached


def found(name: str, *, tools: bool | None, running: bool = True, size: int = 0) -> FoundModel:
    return FoundModel(name, "Ollama" if running else "GGUF file",
                      f"ollama_chat/{name}" if running else None,
                      "http://127.0.0.1:11434" if running else None, 8192, None, tools,
                      path=None if running else Path(f"/m/{name}.gguf"), size_bytes=size)


def test_the_notice_names_the_best_model_and_the_call_that_uses_it() -> None:
    models = [found("big-file", tools=True, running=False, size=9),
              found("no-tools", tools=False, size=8), found("qwen2.5:7b", tools=True, size=4)]
    assert best(models) is models[2]  # tool calls, and already running
    notice = first_run_notice(models)
    assert notice is not None and notice.startswith(
        "Found qwen2.5:7b on Ollama (window 8,192 tokens, tool calls) on this machine "
        "(2 more: nbagent.find_local_models()). The chat still uses the embedded SmolLM2-135M")
    assert notice.endswith("nbagent.current().use_model(nbagent.LiteLLMModel("
                           "'ollama_chat/qwen2.5:7b', api_base='http://127.0.0.1:11434', "
                           "api_key='local'))")
    assert "%" not in notice  # below the notebook room: no magic
    assert first_run_notice([]) is None


def test_the_call_in_the_notice_chats_with_the_server_it_names() -> None:
    with StubServer(info={"/v1/models": {"data": [{"id": "qwen2.5-7b"}]}}) as stub:
        [model] = discover({"LM Studio": root(stub)}, folders=[], timeout=LIVE)
        agent = nbagent.Agent(model=ScriptedModel(), builtin_tools=False, namespace={},
                              archive=False)
        nbagent.set_current(agent)
        try:
            namespace: dict[str, Any] = {"nbagent": nbagent}
            exec(model.call, namespace)  # exactly what the notice tells the user to run
            assert agent.model.name == "openai/qwen2.5-7b"
            agent.chat("hi")
        finally:
            nbagent.set_current(None)
    assert stub.requests and stub.requests[-1]["model"] == "qwen2.5-7b"


def test_a_found_gguf_becomes_an_embedded_model_started_on_first_use() -> None:
    model = found("qwen", tools=True, running=False).model()
    assert isinstance(model, EmbeddedModel)
    assert model.name == "local/smollm2" and model.context_window == 8192
    assert model.path == "/m/qwen.gguf" and model.running is None and model.label == "qwen"
