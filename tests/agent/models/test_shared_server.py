"""One embedded server per user (`models/_shared_server`, `LocalServer(shared=...)`): a
process joins the server another recorded — checked first, nothing started —, the last
process to let go ends it, a server that is ending is waited for, and the server's own
process (`_server_child --clients`) ends once no process holds it, forgetting its record.
The server here is a stand-in (a sleeping process, a stub answering HTTP); the real one,
in real kernels, is tests/real/test_shared_server.py's."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nbagent.agent.models._shared_server import SharedServer, pid_alive, server_key
from nbagent.local import LocalServer
from tests.agent.models.test_server_child import RUN, SCRIPT
from tests.openai_stub import StubServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="file locks across processes")


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                            start_new_session=True)


def shared_of(server: LocalServer) -> SharedServer:
    assert server.shared is not None
    return server.shared


def test_a_process_joins_the_server_another_recorded_and_the_last_to_let_go_ends_it(
        tmp_path: Path) -> None:
    stand_in = sleeper()
    try:
        with StubServer() as stub:
            port = int(stub.base_url.split(":")[2].split("/")[0])
            server = LocalServer(2048, shared=tmp_path)
            shared_of(server).record(stand_in.pid, port, "smollm2")
            server.start()
            assert (server.process, server.pid, server.port) == (None, stand_in.pid, port)
            assert stub.paths == ["/openapi.json"]  # checked, with no model lock taken
            other = SharedServer(tmp_path, shared_of(server).key)  # a second kernel
            assert other.hold()
            server.stop()  # not the last: the server stays
            assert pid_alive(stand_in.pid)
            assert other.let_go()  # the last: it is this one's to end
    finally:
        stand_in.kill()
        stand_in.wait()
    assert stat.S_IMODE(os.stat(tmp_path).st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()} == {0o600}


def test_the_last_holder_ends_a_server_another_process_started(tmp_path: Path) -> None:
    stand_in = sleeper()
    try:
        with StubServer() as stub:
            port = int(stub.base_url.split(":")[2].split("/")[0])
            server = LocalServer(2048, shared=tmp_path)
            shared_of(server).record(stand_in.pid, port, "smollm2")
            server.start()
            server.stop()
            assert stand_in.wait(timeout=15) is not None  # terminated: no one else held it
            assert not shared_of(server).state.exists()  # and its record forgotten
    finally:
        stand_in.kill()
        stand_in.wait()


def test_a_recorded_server_that_is_gone_is_not_joined(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    shared = SharedServer(tmp_path, "k")
    shared.record(gone.pid, 1, "smollm2")
    assert shared.running() is None  # its process ended: a new one is started instead


def test_servers_of_other_configurations_are_not_shared() -> None:
    assert server_key(model="a.gguf", n_ctx=2048) != server_key(model="a.gguf", n_ctx=8192)
    assert server_key(model="a.gguf", n_ctx=2048) == server_key(n_ctx=2048, model="a.gguf")


def test_the_server_process_ends_once_no_process_holds_it(tmp_path: Path) -> None:
    shared = SharedServer(tmp_path, "k")
    assert shared.hold()  # the starter holds it before the server starts
    child = subprocess.Popen([sys.executable, "-c", RUN, "wait", str(SCRIPT),
                              "--clients", str(shared.clients), "--model", "m"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        assert child.stdout is not None
        seen = json.loads(child.stdout.readline())
        assert seen["argv"] == ["llama_cpp.server", "--model", "m"]  # ours taken off
        shared.record(child.pid, 1, "smollm2")
        time.sleep(2.5)  # it checks once a second: held, so it runs on
        assert child.poll() is None
        assert shared.let_go()
        assert child.wait(timeout=10) == 0
        assert not shared.state.exists()  # the record naming it went with it
    finally:
        child.kill()
        child.wait()


def test_the_server_process_writes_no_file_and_ends_when_its_clients_file_is_gone(
        tmp_path: Path) -> None:
    """The kernel that starts a server holds its clients file already (`SharedServer`,
    its one writer): the server's own process only reads it, and with none there no
    kernel can hold it."""
    clients = tmp_path / "k.clients"
    child = subprocess.Popen([sys.executable, "-c", RUN, "wait", str(SCRIPT),
                              "--clients", str(clients), "--model", "m"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
        child.wait()
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_is_ending_is_waited_for_then_started_anew(tmp_path: Path) -> None:
    import fcntl

    shared = SharedServer(tmp_path, "k")
    ending = os.open(shared.clients, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(ending, fcntl.LOCK_EX)  # as a server does the moment it finds no holder
    assert not shared.hold()
    os.close(ending)  # it ended
    shared.hold_when_free(timeout=5)
    assert shared.holding
