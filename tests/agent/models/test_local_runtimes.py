"""The local runtimes' one table (`RUNTIMES`): for every row, a stub on 127.0.0.1 speaking
that runtime; the window the discovery notice names is the window the session uses after
the notice's call and one chat, through litellm's real request path. A row added without
its stub here fails, so a runtime taught to discovery only (or to the session only)
cannot pass silently."""

from __future__ import annotations

from typing import Any

import pytest

import nbagent
from nbagent import Settings
from nbagent.agent.models import RUNTIMES, Runtime, discover, first_run_notice
from nbagent.testing import ScriptedModel
from tests.agent.test_runtime_windows import OLLAMA_SHOW, ollama_chat
from tests.openai_stub import Info, StubServer

pytestmark = pytest.mark.real  # real requests through litellm to servers on 127.0.0.1

OLLAMA_ASKED: list[dict[str, Any]] = []
# row name -> (the row whose port discovery finds it on, what its server answers)
SPEAKS: dict[str, tuple[str, Info]] = {
    "llama.cpp server": ("llama.cpp server", {
        "/v1/models": {"data": [{"id": "qwen", "owned_by": "llamacpp"}]},
        "/props": {"default_generation_settings": {"n_ctx": 8192}}}),
    "vLLM": ("vLLM", {"/v1/models": {"object": "list", "data": [
        {"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "owned_by": "vllm",
         "max_model_len": 32768}]}}),
    "LM Studio": ("LM Studio", {"/api/v0/models": {"object": "list", "data": [
        {"id": "qwen2.5-7b-instruct", "type": "llm", "state": "loaded",
         "max_context_length": 32768, "loaded_context_length": 12288}]}}),
    "Ollama": ("Ollama", {
        "/api/tags": {"models": [{"name": "llama3.1:latest"}]},
        "/api/ps": {"models": [{"name": "llama3.1:latest", "model": "llama3.1:latest",
                                "context_length": 6144}]},
        "/api/show": lambda body: OLLAMA_SHOW, "/api/chat": ollama_chat(OLLAMA_ASKED)}),
    "llama-cpp-python server": ("vLLM", {"/v1/models": {"object": "list", "data": [
        {"id": "smollm2", "object": "model", "owned_by": "me", "permissions": []}]}}),
}


def test_every_row_has_its_stub_and_every_port_row_a_probe() -> None:
    assert set(SPEAKS) == {r.name for r in RUNTIMES}
    assert all((r.port is None) == (r.probe is None) for r in RUNTIMES)
    # a row without a port of its own is found by what an OpenAI-compatible listing says
    assert all(r.probe is not None or r.owned_by for r in RUNTIMES)


@pytest.mark.parametrize("runtime", RUNTIMES, ids=[r.name for r in RUNTIMES])
def test_the_notices_window_is_the_sessions_after_its_call_and_one_chat(
        runtime: Runtime) -> None:
    found_by, info = SPEAKS[runtime.name]
    agent = nbagent.Agent(model=ScriptedModel(), builtin_tools=False, namespace={},
                          archive=False, settings=Settings(notebook_context=False))
    with StubServer(info=info) as stub:
        [found] = discover({found_by: stub.base_url.removesuffix("/v1")}, folders=[],
                           timeout=10)  # a stub that is there: not PROBE_S under load
        notice = first_run_notice([found])
        nbagent.set_current(agent)
        try:
            exec(found.call, {"nbagent": nbagent})  # exactly what the notice says to run
            agent.chat("hi")
        finally:
            nbagent.set_current(None)
    assert found.runtime == runtime.name and found.context_window is not None
    state = agent.context_state()
    window, source = state.thresholds.window.raw_window, state.window_source
    assert (found.context_window, found.window_source) == (window, source)
    assert notice is not None and f"window {window:,} tokens from {source}" in notice
