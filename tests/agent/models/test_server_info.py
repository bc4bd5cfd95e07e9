"""`probe_window` against stub servers on 127.0.0.1 that answer in each local server's
own format (a runtime of `RUNTIMES` each), and against hosts it must not ask."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from nbagent.agent.models import is_local_host, probe_window
from tests.openai_stub import Info, StubServer

LLAMA_CPP_PROPS = {
    "default_generation_settings": {"n_ctx": 16384, "params": {"n_predict": -1}},
    "total_slots": 1,
    "model_path": "/models/qwen2.5-7b-instruct-q4_k_m.gguf",
    "chat_template": "{% for message in messages %}...",
    "build_info": "b5000",
}
VLLM_MODELS = {
    "object": "list",
    "data": [{"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "created": 0,
              "owned_by": "vllm", "root": "Qwen/Qwen2.5-7B-Instruct", "parent": None,
              "max_model_len": 32768, "permission": []}],
}
LM_STUDIO_MODELS = {
    "object": "list",
    "data": [
        {"id": "qwen2.5-7b-instruct", "object": "model", "type": "llm", "arch": "qwen2",
         "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "loaded",
         "max_context_length": 32768, "loaded_context_length": 8192},
        {"id": "llama-3.2-1b-instruct", "object": "model", "type": "llm", "arch": "llama",
         "compatibility_type": "gguf", "quantization": "Q8_0", "state": "not-loaded",
         "max_context_length": 131072},
    ],
}
OLLAMA_SHOW = {
    "modelfile": "FROM llama3.1:8b",
    "parameters": 'stop "<|eot_id|>"\nnum_ctx 12288',
    "template": "{{ .Prompt }}",
    "details": {"format": "gguf", "family": "llama", "parameter_size": "8.0B"},
    "model_info": {"general.architecture": "llama", "llama.context_length": 131072,
                   "llama.embedding_length": 4096},
}
OLLAMA_PS = {"models": [{"name": "llama3.1:latest", "model": "llama3.1:latest", "size": 1,
                         "details": {"family": "llama"}, "expires_at": "2025-01-01T00:00:00Z",
                         "size_vram": 1, "context_length": 6144}]}


def ollama_show(payload: dict[str, Any]) -> Any:
    def show(body: dict[str, Any]) -> Any:
        return payload if body.get("model") in ("llama3.1", "llama3.1:latest") else None
    return show


def asked(api_base: str, model: str) -> tuple[int, str] | None:
    found = probe_window(api_base, model)
    return None if found is None else (found.window, found.detail)


CASES: list[tuple[Info, str, tuple[int, str]]] = [
    ({"/props": LLAMA_CPP_PROPS}, "openai/qwen", (16384, "llama.cpp /props n_ctx")),
    ({"/props": {"n_ctx": 4096}}, "openai/qwen", (4096, "llama.cpp /props n_ctx")),
    ({"/v1/models": VLLM_MODELS}, "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
     (32768, "vLLM /v1/models max_model_len")),
    ({"/v1/models": {"data": [{"id": "x"}]}, "/api/v0/models": LM_STUDIO_MODELS},
     "lm_studio/qwen2.5-7b-instruct", (8192, "LM Studio /api/v0/models loaded_context_length")),
    ({"/api/v0/models": LM_STUDIO_MODELS}, "openai/llama-3.2-1b-instruct",
     (131072, "LM Studio /api/v0/models max_context_length (model not loaded yet)")),
    ({"/api/ps": OLLAMA_PS, "/api/show": ollama_show(OLLAMA_SHOW)}, "ollama_chat/llama3.1",
     (6144, "Ollama /api/ps context_length (as loaded)")),
    ({"/api/ps": {"models": []}, "/api/show": ollama_show(OLLAMA_SHOW)}, "ollama/llama3.1",
     (12288, "Ollama /api/show num_ctx (the Modelfile's)")),
]


@pytest.mark.parametrize(("info", "model", "expected"), CASES,
                         ids=["llama.cpp", "llama.cpp-old", "vllm", "lm-studio-loaded",
                              "lm-studio-not-loaded", "ollama-loaded", "ollama-num-ctx"])
def test_each_servers_own_format_gives_its_window(info: Info, model: str,
                                                  expected: tuple[int, str]) -> None:
    with StubServer(info=info) as stub:
        assert asked(stub.base_url, model) == expected


def test_an_ollama_model_not_loaded_counts_on_the_default_not_the_trained_length() -> None:
    shown = {**OLLAMA_SHOW, "parameters": 'stop "<|eot_id|>"'}
    with StubServer(info={"/api/show": ollama_show(shown)}) as stub:
        root = stub.base_url.removesuffix("/v1")
        found = probe_window(root, "ollama/llama3.1")
    assert found is not None and found.assumed and found.until_loaded
    assert found.window == 4096 and "131,072" in found.detail and "num_ctx" in found.detail


def test_the_model_is_matched_by_name_among_several() -> None:
    listing = {"data": [{"id": "small", "max_model_len": 2048},
                        {"id": "big", "max_model_len": 65536}]}
    with StubServer(info={"/v1/models": listing}) as stub:
        assert asked(stub.base_url, "hosted_vllm/big") == (
            65536, "vLLM /v1/models max_model_len")
        assert probe_window(stub.base_url, "hosted_vllm/unknown") is None  # no guessing


def test_a_server_that_names_no_window_gives_none_after_asking_each_endpoint_once() -> None:
    with StubServer(info={"/v1/models": {"object": "list", "data": [{"id": "m"}]}}) as stub:
        assert probe_window(stub.base_url, "openai/m") is None
    assert stub.paths == ["/props", "/v1/models", "/api/v0/models", "/api/ps", "/api/show"]


def test_llama_cpp_pythons_server_gets_its_default_n_ctx_assumed() -> None:
    listing = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "me",
                                           "permissions": []}]}
    with StubServer(info={"/v1/models": listing}) as stub:
        found = probe_window(stub.base_url, "openai/m")
    assert found is not None and (found.window, found.assumed) == (2048, True)
    assert found.detail.startswith("llama-cpp-python's default n_ctx")


@pytest.mark.parametrize("payload", [{"default_generation_settings": {"n_ctx": "lots"}},
                                     {"default_generation_settings": None}, [1, 2], "text"],
                         ids=["string", "null", "list", "not-json-object"])
def test_odd_answers_never_raise(payload: Any) -> None:
    with StubServer(info={"/props": payload, "/v1/models": payload,
                          "/api/v0/models": payload, "/api/ps": payload}) as stub:
        assert probe_window(stub.base_url, "openai/m") is None


def test_nothing_listening_gives_none_at_once() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert probe_window(f"http://127.0.0.1:{port}/v1", "openai/m") is None


@pytest.mark.parametrize("api_base", ["https://api.openai.com/v1", "http://8.8.8.8:8000/v1",
                                      "ftp://127.0.0.1/v1", "not a url", ""],
                         ids=["hosted", "public-ip", "scheme", "garbage", "empty"])
def test_only_the_users_own_machines_are_asked(api_base: str) -> None:
    assert probe_window(api_base, "openai/gpt-4o") is None


@pytest.mark.parametrize(("host", "local"), [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("10.1.2.3", True),
    ("192.168.0.7", True), ("172.16.0.1", True), ("169.254.1.1", True),
    ("8.8.8.8", False), ("2001:4860:4860::8888", False), ("", False)])
def test_local_hosts(host: str, local: bool) -> None:
    assert is_local_host(host) is local
