"""How each runtime says its window (`models/_window_readers`): each reader against a stub on
127.0.0.1 answering as that runtime does (the answers of test_local_runtimes.py's SPEAKS),
and against a server of another kind (None, never an error); `Asked` asks each endpoint
once however many readers read it; Ollama's order (as loaded, the Modelfile's num_ctx, its
default capped by the trained length) and LM Studio's not-yet-loaded length. How
`probe_window` picks among the readers is tests/agent/models/test_server_info.py's."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from nbagent.agent.models._probe_http import Deadline, client
from nbagent.agent.models._window_readers import (
    Asked,
    ServerWindow,
    WindowReader,
    llama_cpp_python_window,
    llama_cpp_window,
    lm_studio_served_window,
    ollama_window,
    vllm_window,
)
from tests.openai_stub import Info, StubServer

LLAMA_CPP: Info = {"/v1/models": {"data": [{"id": "qwen", "owned_by": "llamacpp"}]},
                   "/props": {"default_generation_settings": {"n_ctx": 8192}}}
VLLM: Info = {"/v1/models": {"object": "list", "data": [
    {"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "owned_by": "vllm",
     "max_model_len": 32768}]}}
LM_STUDIO: Info = {"/api/v0/models": {"object": "list", "data": [
    {"id": "qwen2.5-7b-instruct", "type": "llm", "state": "loaded",
     "max_context_length": 32768, "loaded_context_length": 12288}]}}
OLLAMA_PS: Info = {"/api/ps": {"models": [{"name": "llama3.1:latest", "model": "llama3.1:latest",
                                           "context_length": 6144}]}}
LLAMA_CPP_PYTHON: Info = {"/v1/models": {"object": "list", "data": [
    {"id": "smollm2", "object": "model", "owned_by": "me", "permissions": []}]}}


def read(info: Info, names: tuple[str, ...], *readers: WindowReader
         ) -> tuple[list[ServerWindow | None], list[str]]:
    """What each reader says of a stub answering `info`, and the paths it was asked."""
    with StubServer(info=info) as stub:
        async def go() -> list[ServerWindow | None]:
            async with client() as http:
                asked = Asked(http, stub.base_url.removesuffix("/v1"), Deadline(5))
                return [await reader(asked, names) for reader in readers]

        return asyncio.run(go()), stub.paths


Case = tuple[Info, tuple[str, ...], Callable[[Any, tuple[str, ...]], Awaitable[Any]], int, str]
CASES: dict[str, Case] = {
    "llama.cpp": (LLAMA_CPP, ("qwen",), llama_cpp_window, 8192, "llama.cpp /props n_ctx"),
    "vLLM": (VLLM, ("Qwen/Qwen2.5-7B-Instruct",), vllm_window, 32768,
             "vLLM /v1/models max_model_len"),
    "LM Studio": (LM_STUDIO, ("qwen2.5-7b-instruct",), lm_studio_served_window, 12288,
                  "LM Studio /api/v0/models loaded_context_length"),
    "Ollama": (OLLAMA_PS, ("ollama/llama3.1", "llama3.1"), ollama_window, 6144,
               "Ollama /api/ps context_length (as loaded)"),
    "llama-cpp-python": (LLAMA_CPP_PYTHON, ("smollm2",), llama_cpp_python_window, 2048,
                         "llama-cpp-python's default n_ctx (its server does not say)"),
}


@pytest.mark.parametrize("runtime", list(CASES))
def test_each_reader_reads_its_runtimes_answer_and_none_from_another_kind(runtime: str) -> None:
    info, names, reader, window, detail = CASES[runtime]
    [found], _ = read(info, names, reader)
    assert found is not None and (found.window, found.detail) == (window, detail)
    assert found.assumed is (runtime == "llama-cpp-python")
    other = LLAMA_CPP if runtime != "llama.cpp" else VLLM
    [nothing], _ = read(other, names, reader)
    assert nothing is None


def test_each_endpoint_is_asked_once_however_many_readers_read_it() -> None:
    found, paths = read(VLLM, ("Qwen/Qwen2.5-7B-Instruct",), vllm_window,
                        llama_cpp_python_window, vllm_window)
    assert [w.window if w else None for w in found] == [32768, None, 32768]
    assert paths == ["/v1/models"]


def test_vllm_picks_the_named_model_among_several() -> None:
    info: Info = {"/v1/models": {"data": [{"id": "a", "max_model_len": 1000},
                                          {"id": "b", "max_model_len": 2000}]}}
    [named], _ = read(info, ("b",), vllm_window)
    assert named is not None and named.window == 2000
    [unknown], _ = read(info, ("c",), vllm_window)
    assert unknown is None  # two models and neither is this one: no guess


def test_lm_studio_not_loaded_gives_its_most_until_loaded() -> None:
    info: Info = {"/api/v0/models": {"data": [
        {"id": "qwen", "state": "not-loaded", "max_context_length": 32768}]}}
    [found], _ = read(info, ("qwen",), lm_studio_served_window)
    assert found is not None and (found.window, found.until_loaded) == (32768, True)


def test_ollama_not_loaded_reads_num_ctx_then_its_default_capped_by_training() -> None:
    shown = {"parameters": "stop <|eot|>\nnum_ctx 16384", "model_info": {
        "llama.context_length": 131072}}
    asked: list[dict[str, Any]] = []

    def show(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        return shown

    info: Info = {"/api/ps": {"models": []}, "/api/show": show}
    [found], _ = read(info, ("ollama/llama3.1", "llama3.1"), ollama_window)
    assert found is not None and found.window == 16384 and not found.assumed
    assert asked == [{"model": "llama3.1"}]  # without litellm's prefix
    shown = {"parameters": "", "model_info": {"llama.context_length": 131072}}
    [default], _ = read(info, ("ollama/llama3.1", "llama3.1"), ollama_window)
    assert default is not None and default.window == 4096
    assert default.assumed and default.until_loaded and "131,072" in default.detail
    shown = {"parameters": "", "model_info": {"tiny.context_length": 2048}}
    [capped], _ = read(info, ("ollama/tiny", "tiny"), ollama_window)
    assert capped is not None and capped.window == 2048


def test_ollama_llama3_is_found_as_llama3_latest() -> None:
    info: Info = {"/api/ps": {"models": [{"name": "llama3:latest", "context_length": 6144}]}}
    [found], _ = read(info, ("ollama/llama3", "llama3"), ollama_window)
    [other], _ = read(OLLAMA_PS, ("ollama/mistral", "mistral"), ollama_window)
    assert found is not None and found.window == 6144
    assert other is None  # another model is loaded, and /api/show is not there
