"""`AgentModel`: the agent's answers to its session's model questions — one object, asked
each time, doing no I/O except the explicit window probe."""

from __future__ import annotations

import pytest

from nbagent import Agent, LiteLLMModel, Settings
from nbagent.testing import ScriptedModel, ScriptedSummarizer
from tests.openai_stub import StubServer


def test_the_session_is_the_one_place_that_says_which_window() -> None:
    agent = Agent(model=ScriptedModel(context_window=32_000), archive=False)
    assert agent.window() == agent.session.window() == agent.controller.window()
    assert agent.window().raw_window == 32_000
    agent.session.learn_window(9_000)  # the provider stated its real limit
    assert agent.controller.window().raw_window == 9_000
    assert agent.controller.window().source == "learned"
    agent.use_model(ScriptedModel(context_window=64_000))  # a new model forgets it
    assert agent.controller.window().raw_window == 64_000


def test_a_setting_changed_on_the_agent_reaches_the_controller_at_once() -> None:
    agent = Agent(model=ScriptedModel(), archive=False)
    agent.configure(window=8_192)
    assert agent.controller.settings().max_context_tokens == 8_192
    assert agent.controller.thresholds().window.raw_window == 8_192


def test_the_summarizer_is_built_once_per_model_and_follows_a_switch() -> None:
    agent = Agent(model=ScriptedModel(name="openai/gpt-4o"), archive=False)
    first = agent.controller.summarize
    assert agent.controller.summarize is first  # asked again: the same one, not rebuilt
    agent.use_model(ScriptedModel(name="anthropic/claude-sonnet-4-5"))
    assert agent.controller.summarize is not first
    own = ScriptedSummarizer()
    assert Agent(model=ScriptedModel(), summarize=own, archive=False).controller.summarize is own


def test_the_tokenizer_follows_the_model_and_every_message_is_recounted() -> None:
    class Counting(ScriptedModel):
        def count_text(self):  # type: ignore[no-untyped-def]
            return lambda text: 1_000

    agent = Agent(model=ScriptedModel(default="ok"), archive=False, builtin_tools=False)
    agent.chat("hello")
    before = agent.history.estimated_tokens
    tracker = agent.session.tracker
    agent.use_model(Counting(default="ok"))
    assert agent.session.tracker is tracker  # the session's own tracker, switched in place
    assert tracker.count_text is not None and tracker.count_text("x") == 1_000
    assert agent.history.estimated_tokens > before


@pytest.mark.real  # a real request through litellm to a server on 127.0.0.1
def test_the_local_window_probe_runs_on_a_chat_not_on_a_getter() -> None:
    with StubServer(info={"/props": {"n_ctx": 4096}}) as stub:
        model = LiteLLMModel("openai/qwen", api_base=stub.base_url, api_key="sk-test-not-real")
        agent = Agent(model=model, archive=False, builtin_tools=False,
                      settings=Settings(notebook_context=False))
        agent.context_state()
        agent.window()
        assert stub.paths == []  # reading the state asks nobody
        agent.chat("hi")
        assert stub.paths.count("/props") == 1 and agent.window().raw_window == 4_096
        agent.chat("again")
        assert stub.paths.count("/props") == 1  # once per model object
