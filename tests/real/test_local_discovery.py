"""Discovery and windows against a real server: llama-cpp-python's server (the embedded
model's, a real process on 127.0.0.1) stands in for one the user started with their own
`n_ctx`. It is found on its port and named as llama-cpp-python's, whose default n_ctx is
assumed (its server reports none); the call the notice gives chats with it through
litellm's real HTTP path, the session shows that window as assumed, and the server's own
overflow error teaches the session the real one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import nbagent
from nbagent import testing
from nbagent.agent.models import discover, first_run_notice
from nbagent.local import LocalServer

pytestmark = [pytest.mark.real, pytest.mark.llama]
USERS_N_CTX = 1_024  # what the user started their server with (its default is 2,048)


@pytest.fixture(scope="module")
def users_server() -> Iterator[LocalServer]:
    with LocalServer(USERS_N_CTX) as running:
        yield running


def test_a_running_llama_cpp_python_server_is_found_and_its_window_learned_from_it(
        users_server: LocalServer) -> None:
    root = users_server.base_url.removesuffix("/v1")
    [found] = discover({"vLLM": root}, folders=[],  # its default port is vLLM's (8000)
                       timeout=10)  # it is there: not PROBE_S beside a busy run
    assert (found.name, found.runtime, found.litellm_name, found.api_base) == (
        "smollm2", "llama-cpp-python server", "openai/smollm2", users_server.base_url)
    assert found.context_window == 2_048  # its default: the server cannot say 1,024
    assert (found.window_source or "").startswith("assumed: llama-cpp-python's default n_ctx")
    notice = first_run_notice([found])
    assert notice is not None and found.call in notice
    agent = nbagent.Agent(model=testing.ScriptedModel(), builtin_tools=False,
                          namespace={}, archive=False)
    nbagent.set_current(agent)
    try:
        namespace: dict[str, Any] = {"nbagent": nbagent}
        exec(found.call, namespace)  # what the user is told to run
        agent.configure(notebook_context=False)
        result = agent.chat("Say hello.")
        assert result.text.strip() and agent.model.name == "openai/smollm2"
        assumed = agent.context_state()
        assert (assumed.thresholds.window.raw_window, assumed.thresholds.window.kind) == (
            2_048, "assumed")
        assert f"window 2,048 from {found.window_source}" in agent.describe()
        # more than the server's real 1,024 tokens, less than the assumed 2,048's trigger
        agent.session.history.extend([
            {"role": "user", "content": "Here are my notes on the data. " * 60},
            {"role": "assistant", "content": "Noted, the data looks fine. " * 60}])
        agent.chat("What did I say?")  # the server refuses it, stating its real limit
    finally:
        nbagent.set_current(None)
    learned = agent.context_state()
    assert (learned.thresholds.window.raw_window, learned.window_source) == (
        USERS_N_CTX, "learned")
