"""Which model object a name means (`_resolve`): a litellm name is a `LiteLLMModel`, no
name or "local" the embedded model (started by nothing here), a model object itself; the
summaries go to the model named for them, else a small model of a cloud chat model's
provider, else the chat model; and a request is counted exactly only by a model that can."""

from __future__ import annotations

import pytest

from nbagent import Settings
from nbagent.agent.models import (
    EmbeddedModel,
    LiteLLMModel,
    chat_model,
    compact_model,
    is_local,
    request_counter,
)
from nbagent.testing import ScriptedModel


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in ("NBAGENT_MODEL", "NBAGENT_COMPACT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return Settings()


@pytest.mark.parametrize(("name", "local"), [
    (None, True), ("local", True), ("local/smollm2", True), ("openai/gpt-4o", False),
    ("ollama_chat/llama3.1", False)])
def test_which_names_mean_the_embedded_model(name: str | None, local: bool) -> None:
    assert is_local(name) is local


def test_a_name_an_object_or_nothing_gives_the_model_object(settings: Settings) -> None:
    named = chat_model("openai/gpt-4o", settings)
    assert isinstance(named, LiteLLMModel) and named.name == "openai/gpt-4o"
    embedded = chat_model(None, settings)
    assert isinstance(embedded, EmbeddedModel) and embedded.running is None
    assert isinstance(chat_model("local", settings), EmbeddedModel)
    own = ScriptedModel()
    assert chat_model(own, settings) is own
    assert chat_model(None, Settings(model="anthropic/claude-sonnet-4-5")).name == (
        "anthropic/claude-sonnet-4-5")


def test_summaries_go_to_the_named_model_else_a_small_one_of_the_provider(
        settings: Settings) -> None:
    cloud = LiteLLMModel("openai/gpt-4o")
    assert compact_model(None, cloud, settings).name == "openai/gpt-4o-mini"
    assert compact_model("gemini/gemini-2.5-pro", cloud, settings).name == (
        "gemini/gemini-2.5-pro")
    own = ScriptedModel()
    assert compact_model(own, cloud, settings) is own
    served = LiteLLMModel("openai/qwen", api_base="http://127.0.0.1:8080/v1")
    assert compact_model(None, served, settings) is served  # a local server: itself
    unknown = LiteLLMModel("mistral/mistral-large-latest")
    assert compact_model(None, unknown, settings) is unknown
    assert compact_model(None, cloud, Settings(compact_model="openai/o3-mini")).name == (
        "openai/o3-mini")


def test_only_a_model_that_counts_its_requests_gives_a_counter(settings: Settings) -> None:
    class Counting(ScriptedModel):
        def count_request(self, *request: object) -> int:
            return 7

    counting = Counting()
    counter = request_counter(counting)
    assert counter is not None and counter([], []) == 7
    assert request_counter(ScriptedModel()) is None
    assert request_counter(chat_model(None, settings)) is None  # not running: nothing to ask
