"""One embedded server per user, in real kernels (jupyter_client, ipykernel) and the real
SmolLM2 server: the first kernel that needs it starts it, the others reuse it (one
`_server_child.py` process for all), a kernel that chose another model in its load cell
starts nothing and holds nothing, the server outlives the kernel that started it (even
SIGKILLed) while another uses it, one that died is restarted by the next chat with a
status line, and it is gone once the last kernel is."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psutil  # ipykernel depends on it
import pytest

from tests.notebook.helpers import execute, printed, started_kernel

# its kernels start the embedded server: it runs in the llama group, never beside another
pytestmark = [pytest.mark.real, pytest.mark.llama]
jupyter_client = pytest.importorskip("jupyter_client")

WAIT_S = 180
SERVER_CHILD = "_server_child.py"
WHO = ("import os, nbagent\n"
       "served = getattr(nbagent.current().model, 'running', None)\n"
       "print('server', served.server.pid if served is not None else None)\n"
       "print('kernel', os.getpid())")
STATUSES = ("statuses = []\n"
            "nbagent.current().events.subscribe(\n"
            "    lambda e: statuses.append(e.text) if type(e).__name__ == 'Status' else None)")


def servers(data: Path) -> list[psutil.Process]:
    """The embedded server processes sharing `data`'s servers folder (any parent)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        line = process.info["cmdline"] or []
        if any(part.endswith(SERVER_CHILD) for part in line) and any(
                part.startswith(str(data)) for part in line):
            found.append(process)
    return found


def poll(check: Any, what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.5)
    return result


def run(client: Any, code: str) -> str:
    """Run `code`; what it printed and displayed (plain text), asserting it ran."""
    reply, messages = execute(client, code)
    shown = printed(messages) + "".join(
        m["content"]["data"].get("text/plain", "") + "\n" for m in messages
        if m["msg_type"] in ("display_data", "update_display_data"))
    assert reply["status"] == "ok", shown
    return shown


def value(shown: str, name: str) -> str:
    return next(line.split()[1] for line in shown.splitlines() if line.startswith(name + " "))


@pytest.fixture
def kernels(tmp_path: Path) -> Iterator[Any]:
    """Start kernels of one user (one data folder) on demand: `kernels(model=None)`."""
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NBAGENT_", "OPENAI_"))}
    # replies of a few words: which server answers is the point, not what it says
    env.update(NBAGENT_DATA_DIR=str(data), NBAGENT_LOCAL_N_CTX="2048",
               NBAGENT_LOCAL_MAX_TOKENS="16", LITELLM_LOCAL_MODEL_COST_MAP="True")
    with ExitStack() as stack:
        def start(name: str) -> tuple[Any, Any]:
            folder = tmp_path / name
            folder.mkdir()
            return stack.enter_context(started_kernel(folder, env, timeout=WAIT_S))

        start.data = data  # type: ignore[attr-defined]
        yield start
    poll(lambda: not servers(data), "the server gone with the last kernel", 30)


def test_the_kernels_of_one_user_share_one_embedded_server(kernels: Any) -> None:
    data: Path = kernels.data
    first_manager, first = kernels("first")
    run(first, "%load_ext nbagent")  # the warm start, once the load cell has run
    (server,) = poll(lambda: servers(data), "the embedded server started at the load")
    assert "answered by SmolLM2-135M" in run(first, "%%chat\nSay hello.")
    assert int(value(run(first, WHO), "server")) == server.pid

    _, second = kernels("second")
    run(second, "%load_ext nbagent")
    assert "answered by SmolLM2-135M" in run(second, "%%chat\nSay hello too.")
    assert int(value(run(second, WHO), "server")) == server.pid  # reused, not a second one
    assert servers(data) == [server]

    _, third = kernels("third")  # another model chosen in the load cell: nothing started
    run(third, "%load_ext nbagent\n%nbagent model=openai/gpt-4o-mini")
    time.sleep(3)
    assert value(run(third, WHO), "server") == "None" and servers(data) == [server]

    os.kill(first_manager.provisioner.process.pid, signal.SIGKILL)  # its starter, killed
    poll(lambda: not psutil.pid_exists(first_manager.provisioner.process.pid)
         or psutil.Process(first_manager.provisioner.process.pid).status() == "zombie",
         "the first kernel gone")
    time.sleep(3)  # the server checks once a second whether anyone still holds it
    assert servers(data) == [server] and server.is_running()
    assert "answered by SmolLM2-135M" in run(second, "%%chat\nAnd now?")

    server.kill()  # it dies: the next chat restarts it and says so
    server.wait(timeout=30)
    run(second, STATUSES)
    assert "answered by SmolLM2-135M" in run(second, "%%chat\nStill there?")
    said = run(second, "print(statuses)")
    assert "the local model's server had stopped (started by another kernel); restarting" \
           " it…" in said, said
    (restarted,) = servers(data)
    assert restarted.pid != server.pid
    assert os.getsid(restarted.pid) == restarted.pid  # a session of its own
    line = restarted.cmdline()
    cores = len(os.sched_getaffinity(0))
    assert int(line[line.index("--n_threads") + 1]) == max(1, cores // 2)  # never all cores
