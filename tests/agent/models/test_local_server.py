"""The embedded server is kept alive: a model checks its server before each request (a
poll, no request), a server that died is restarted and the request goes to it, and a
restart that fails says what happened — never "the provider may be down"."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nbagent import Agent, LocalModelError
from nbagent.agent.models import amx_advertised
from nbagent.local import LocalModel, LocalServer
from nbagent.testing import ScriptedModel

from ...openai_stub import StubServer

HI = [{"role": "user", "content": "hi"}]


class Restartable:
    """A server as LocalModel sees it: dead until `ensure_running` restarts it at `then`."""

    def __init__(self, then: str, *, dead: bool = True, dies_during: bool = False) -> None:
        self.base_url = then
        self.dead = dead
        self.dies_during = dies_during
        self.checks = 0
        self.restarts = 0

    def ensure_running(self, on_status: object = None) -> bool:
        self.checks += 1
        if not self.dead:
            return False
        self.dead, self.restarts = False, self.restarts + 1
        return True

    def died(self, within: float = 0.0) -> int | None:
        if self.dies_during:
            self.dies_during, self.dead = False, True
            return -9
        return None


def closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def model_on(api_base: str, server: Restartable) -> LocalModel:
    return LocalModel("openai/smollm2", api_base=api_base, api_key="local-no-key",
                      options={"max_tokens": 8}, server=server)


def test_a_server_known_alive_costs_no_extra_request() -> None:
    with StubServer() as stub:
        server = Restartable(stub.base_url, dead=False)
        model = model_on(stub.base_url, server)
        for _ in range(3):
            model.complete(HI, [], on_text=None)
        assert server.checks == 3 and server.restarts == 0
        assert stub.paths == ["/v1/chat/completions"] * 3  # nothing but the chats


def test_a_server_that_died_between_turns_is_restarted_and_asked() -> None:
    with StubServer() as stub:
        server = Restartable(stub.base_url)  # restarted on another port
        model = model_on(closed_port(), server)
        assert model.complete(HI, [], on_text=None).message["content"]
        assert server.restarts == 1 and model.api_base == stub.base_url
        assert len(stub.requests) == 1


def test_a_server_that_dies_during_a_request_is_restarted_and_asked_again() -> None:
    with StubServer() as stub:
        server = Restartable(stub.base_url, dead=False, dies_during=True)
        model = model_on(closed_port(), server)  # the request finds nobody: it died
        pieces: list[str] = []
        assert model.complete(HI, [], on_text=pieces.append).message["content"]
        assert server.restarts == 1 and len(stub.requests) == 1 and pieces


def test_a_failed_restart_names_the_exit_code_and_the_cause(tmp_path: Path) -> None:
    server = LocalServer(1024, path=tmp_path / "gone.gguf")
    server.process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    server.process.wait(30)
    statuses: list[str] = []
    with pytest.raises(LocalModelError) as caught:
        server.ensure_running(statuses.append)
    assert statuses == ["the local model's server had stopped (exit code 3); restarting it…"]
    assert str(caught.value).startswith(
        "the local model's server stopped (exit code 3) and could not be restarted: ")
    assert "gone.gguf" in str(caught.value)


def test_the_loop_passes_the_local_models_own_error_through() -> None:
    said = ("the local model's server stopped (exit code -9) and could not be restarted: "
            "The embedded model's server exited: out of memory")
    agent = Agent(model=ScriptedModel([LocalModelError(said)], name="local/smollm2"),
                  builtin_tools=False, namespace={}, archive=False)
    with pytest.raises(LocalModelError) as caught:
        agent.chat("hi")
    assert str(caught.value) == said and "provider may be down" not in str(caught.value)


@pytest.mark.parametrize(("flags", "expected"), [
    ("fpu sse avx512f amx_bf16 amx_tile amx_int8", True), ("fpu sse avx2 fma", False)],
    ids=["amx", "no-amx"])
def test_a_cpu_advertising_amx_gets_a_server_without_it(tmp_path: Path, flags: str,
                                                        expected: bool) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    assert amx_advertised(info) is expected
    assert amx_advertised(tmp_path / "none") is False
