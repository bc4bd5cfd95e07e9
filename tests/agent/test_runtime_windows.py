"""Each local runtime's window comes from the runtime, and a session says where it came
from: real chats through litellm's real request path to stub servers on 127.0.0.1 shaped
like each runtime of `RUNTIMES` (Ollama through its native /api/chat); a local server that says nothing gets a conservative window
shown as assumed, never the cloud default. And a limit the provider stated caps a larger
configured window, so its overflow is never repeated."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import Agent, LiteLLMModel, Settings
from nbagent.engine import DEFAULT_WINDOW
from nbagent.events import ContextChanged
from tests.openai_stub import Info, StubServer

pytestmark = pytest.mark.real  # real requests through litellm to servers on 127.0.0.1

OLLAMA_SHOW = {"capabilities": ["completion"], "parameters": 'stop "<|eot_id|>"',
               "model_info": {"general.architecture": "llama", "llama.context_length": 131072}}


def ollama_chat(asked: list[dict[str, Any]]) -> Any:
    """Ollama's native /api/chat answer (not streamed), recording each body litellm sent."""
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        return {"model": body["model"], "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": "hello from ollama"},
                "done": True, "done_reason": "stop", "prompt_eval_count": 40, "eval_count": 4}
    return answer


def agent_on(model: LiteLLMModel, **settings: Any) -> Agent:
    return Agent(model=model, archive=False, builtin_tools=False, namespace={},
                 settings=Settings(notebook_context=False, **settings))


# (runtime, what its server answers, the litellm name, api_base under the root,
#  the window, the source the meter names)
RUNTIMES: list[tuple[str, Info, str, str, int, str]] = [
    ("llama-server", {"/v1/models": {"data": [{"id": "qwen", "owned_by": "llamacpp"}]},
                      "/props": {"default_generation_settings": {"n_ctx": 8192}}},
     "openai/qwen", "/v1", 8192, "server: llama.cpp /props n_ctx"),
    ("vllm", {"/v1/models": {"object": "list", "data": [
        {"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "owned_by": "vllm",
         "max_model_len": 32768}]}},
     "hosted_vllm/Qwen/Qwen2.5-7B-Instruct", "/v1", 32768,
     "server: vLLM /v1/models max_model_len"),
    ("lm-studio", {"/api/v0/models": {"object": "list", "data": [
        {"id": "qwen2.5-7b-instruct", "type": "llm", "state": "loaded",
         "max_context_length": 32768, "loaded_context_length": 8192}]}},
     "lm_studio/qwen2.5-7b-instruct", "/v1", 8192,
     "server: LM Studio /api/v0/models loaded_context_length"),
    ("llama-cpp-python", {"/v1/models": {"object": "list", "data": [
        {"id": "smollm2", "object": "model", "owned_by": "me", "permissions": []}]}},
     "openai/smollm2", "/v1", 2048,
     "assumed: llama-cpp-python's default n_ctx (its server does not say)"),
    ("unknown-server", {"/v1/models": {"data": [{"id": "my-model", "owned_by": "someone"}]}},
     "openai/my-model", "/v1", 4096,
     "assumed: a local server that reports no window (set NBAGENT_MAX_CONTEXT_TOKENS)"),
]


@pytest.mark.parametrize(("info", "name", "under", "window", "source"),
                         [r[1:] for r in RUNTIMES], ids=[r[0] for r in RUNTIMES])
def test_each_runtime_gives_the_session_its_window_and_says_where_from(
        info: Info, name: str, under: str, window: int, source: str) -> None:
    with StubServer(info=info) as stub:
        root = stub.base_url.removesuffix("/v1")
        agent = agent_on(LiteLLMModel(name, api_base=root + under, api_key="local"))
        result = agent.chat("hi")
    assert result.text.startswith("I see")  # the chat went through litellm to the stub
    assert stub.requests[-1]["messages"][-1] == {"role": "user", "content": "hi"}
    state = agent.context_state()
    assert (state.thresholds.window.raw_window, state.window_source) == (window, source)
    assert f"window {window:,} from {source}" in agent.describe()


def test_ollama_counts_on_its_default_context_until_the_model_is_loaded_then_on_api_ps(
        ) -> None:
    asked: list[dict[str, Any]] = []
    loaded: list[dict[str, Any]] = []
    info: Info = {"/api/show": lambda body: OLLAMA_SHOW,
                  "/api/ps": lambda body: {"models": loaded},
                  "/api/chat": ollama_chat(asked)}
    with StubServer(info=info) as stub:
        root = stub.base_url.removesuffix("/v1")
        agent = agent_on(LiteLLMModel("ollama_chat/llama3.1", api_base=root, api_key="local"))
        assert agent.chat("hi").text == "hello from ollama"
        first = agent.context_state()
        # Ollama loaded the model for that request, with the context it chose
        loaded.append({"name": "llama3.1:latest", "model": "llama3.1:latest",
                       "context_length": 8192})
        agent.chat("again")
    assert asked[0]["model"] == "llama3.1" and asked[0]["messages"][-1]["content"] == "hi"
    assert first.thresholds.window.raw_window == 4096  # Ollama's default, not 131,072
    assert first.window_source.startswith("assumed: Ollama's default context (model trained "
                                          "for 131,072; set OLLAMA_CONTEXT_LENGTH or num_ctx")
    state = agent.context_state()
    assert (state.thresholds.window.raw_window, state.window_source) == (
        8192, "server: Ollama /api/ps context_length (as loaded)")


def test_ollama_without_an_api_base_is_asked_where_litellm_sends_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[str, Any]] = []
    info: Info = {"/api/ps": {"models": [{"name": "qwen2.5:7b", "context_length": 6144}]},
                  "/api/chat": ollama_chat(asked)}
    with StubServer(info=info) as stub:
        monkeypatch.setenv("OLLAMA_API_BASE", stub.base_url.removesuffix("/v1"))
        agent = agent_on(LiteLLMModel("ollama_chat/qwen2.5:7b"))
        agent.chat("hi")
    assert asked and agent.context_state().thresholds.window.raw_window == 6144


def test_ollama_asked_for_a_larger_context_per_request_counts_on_it() -> None:
    asked: list[dict[str, Any]] = []
    info: Info = {"/api/show": lambda body: OLLAMA_SHOW, "/api/ps": {"models": []},
                  "/api/chat": ollama_chat(asked)}
    with StubServer(info=info) as stub:
        root = stub.base_url.removesuffix("/v1")
        agent = agent_on(LiteLLMModel("ollama_chat/llama3.1", api_base=root, api_key="local",
                                      options={"num_ctx": 16384}))
        agent.chat("hi")
    assert asked[0]["options"]["num_ctx"] == 16384  # litellm sends it in Ollama's options
    state = agent.context_state()
    assert (state.thresholds.window.raw_window, state.window_source) == (
        16384, "server: num_ctx sent with each request (Ollama's native API)")


def test_a_known_model_behind_a_local_proxy_keeps_litellms_window() -> None:
    # a proxy on loopback serving a provider's model: litellm knows its window
    with StubServer(info={"/v1/models": {"data": [{"id": "gpt-4o"}]}}) as stub:
        agent = agent_on(LiteLLMModel("openai/gpt-4o", api_base=stub.base_url,
                                      api_key="local"))
        agent.chat("hi")
    window = agent.window()
    assert (window.raw_window, window.source) == (128_000, "litellm")


def test_no_local_server_ever_gets_the_cloud_default() -> None:
    for _, info, name, under, _, _ in RUNTIMES:
        with StubServer(info=info) as stub:
            model = LiteLLMModel(name, api_base=stub.base_url.removesuffix("/v1") + under,
                                 api_key="local")
            agent = agent_on(model)
            before = agent.window()  # not asked yet: a conservative assumption already
            agent.chat("hi")
        assert before.kind == "assumed" and before.raw_window < DEFAULT_WINDOW
        assert agent.window().raw_window < DEFAULT_WINDOW


def test_a_local_servers_window_is_known_as_soon_as_the_agent_switches_to_it() -> None:
    info: Info = {"/v1/models": {"data": [{"id": "qwen", "owned_by": "llamacpp"}]},
                  "/props": {"default_generation_settings": {"n_ctx": 8192}}}
    with StubServer(info=info) as stub:
        agent = agent_on(LiteLLMModel("openai/gpt-4o-mini", api_key="sk-test"))
        meters: list[ContextChanged] = []
        agent.events.subscribe(lambda e: meters.append(e) if isinstance(e, ContextChanged)
                               else None)
        agent.use_model(LiteLLMModel("openai/qwen", api_base=stub.base_url, api_key="local"))
        state = agent.context_state()
        assert (state.thresholds.window.raw_window, state.window_source) == (
            8192, "server: llama.cpp /props n_ctx")  # before any chat, no 4,096 assumed
        assert stub.requests == []  # asked its window only
        # what the meter was told when the model changed: the server's window already
        assert [m.state.window_source for m in meters] == ["server: llama.cpp /props n_ctx"]


def test_a_local_server_not_answering_at_the_switch_is_asked_again_at_the_first_chat() -> None:
    info: Info = {"/v1/models": {"data": [{"id": "qwen", "owned_by": "llamacpp"}]},
                  "/props": {"default_generation_settings": {"n_ctx": 8192}}}
    stub = StubServer(info=info)  # its port bound, nothing answering yet: a server starting
    agent = agent_on(LiteLLMModel("openai/gpt-4o-mini", api_key="sk-test"))
    agent.use_model(LiteLLMModel("openai/qwen", api_base=stub.base_url, api_key="local"))
    assert agent.window().source == (
        "assumed: a local server not asked yet (asked at the first chat)")
    with stub:  # up now
        agent.chat("hi")
    assert (agent.window().raw_window, agent.window().source) == (
        8192, "server: llama.cpp /props n_ctx")


def test_a_local_server_not_asked_yet_says_so_and_one_that_says_nothing_says_that() -> None:
    with StubServer(info={"/v1/models": {"data": [{"id": "my-model", "owned_by": "x"}]}}) \
            as stub:
        agent = agent_on(LiteLLMModel("openai/my-model", api_base=stub.base_url,
                                      api_key="local"))
        before = agent.window()  # configuring asks nothing
        agent.chat("hi")
    assert (before.raw_window, before.kind) == (4096, "assumed")
    assert agent.context_state().window_source == (
        "assumed: a local server that reports no window (set NBAGENT_MAX_CONTEXT_TOKENS)")
    assert before.source == "assumed: a local server not asked yet (asked at the first chat)"


class CountingStub(StubServer):
    """The stub, counting the overflow errors it sent."""

    overflows = 0

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, payload = super().answer(body)
        self.overflows += status == 400
        return status, payload


def test_a_stated_limit_caps_a_larger_configured_window_and_is_never_overflowed_again(
        ) -> None:
    stub = CountingStub(context=3_000)
    with stub:
        agent = agent_on(LiteLLMModel("openai/my-model", api_base=stub.base_url,
                                      api_key="local"), max_context_tokens=200_000)
        assert agent.window().source == "env"
        agent.history.extend([{"role": "user", "content": "old notes " * 900},
                              {"role": "assistant", "content": "noted " * 900}])
        agent.chat("What did we decide?")  # too long for the server: it says its limit
        assert stub.overflows == 1
        state = agent.context_state()
        assert state.thresholds.window.raw_window == 3_000
        assert state.window_source == ("learned: the limit the server showed, below "
                                       "NBAGENT_MAX_CONTEXT_TOKENS (200,000)")
        assert "window 3,000 from learned: the limit the server showed" in agent.describe()
        for turn in range(6):  # the configured 200,000 would overflow again at once
            agent.chat(f"Turn {turn}: " + "more data " * 250)
    assert stub.overflows == 1
