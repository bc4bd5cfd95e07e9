"""Discovery against a real server: the embedded llama.cpp server (llama-cpp-python's,
a real process on 127.0.0.1) stands in for one the user started, found as a llama.cpp
server, and the call the notice gives chats with it through litellm's real HTTP path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import nbagent
from nbagent import testing
from nbagent.agent.models._discovery import discover, first_run_notice
from nbagent.local import LocalServer

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def users_server() -> Iterator[LocalServer]:
    with LocalServer(2048) as running:
        yield running


def test_a_running_llama_cpp_server_is_found_and_the_notice_call_chats_with_it(
        users_server: LocalServer) -> None:
    root = users_server.base_url.removesuffix("/v1")
    [found] = discover({"llama.cpp server": root}, folders=[])
    assert (found.name, found.litellm_name, found.api_base) == (
        "smollm2", "openai/smollm2", users_server.base_url)
    notice = first_run_notice([found])
    assert notice is not None and found.call in notice
    agent = nbagent.Agent(model=testing.ScriptedModel(), builtin_tools=False,
                          namespace={}, archive=False)
    nbagent.set_current(agent)
    try:
        namespace: dict[str, Any] = {"nbagent": nbagent}
        exec(found.call, namespace)  # what the user is told to run
        result = agent.chat("Say hello.")
    finally:
        nbagent.agent._current._current = None
    assert result.text.strip() and agent.model.name == "openai/smollm2"
    assert agent.session.window().raw_window > 0
