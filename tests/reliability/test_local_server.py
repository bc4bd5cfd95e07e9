"""The embedded llama.cpp server is ours to keep alive: the real SmolLM2 server, a real
kernel and real signals.

- The stop button (the kernel's SIGINT, sent to its process group) pressed while the
  model streams a reply leaves the server running: the next chat answers from the same
  process; and when the kernel is killed, the server ends with it (no orphan).
- A server that died (SIGKILL) is restarted by the next chat, which says so on a status
  line and answers.
"""

from __future__ import annotations

import os
import queue
import signal
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, Settings
from nbagent.agent.models import EmbeddedModel, LocalModel
from nbagent.events import Status
from tests.notebook.helpers import started_kernel

from .test_kernel_interrupt import STARTED_S, collect, run

pytestmark = [pytest.mark.real, pytest.mark.llama]
jupyter_client = pytest.importorskip("jupyter_client")
WINDOW = 2048

SETUP = textwrap.dedent("""
    %load_ext nbagent
    import nbagent
    agent = nbagent.Agent(namespace={}, builtin_tools=False, archive=False)
    nbagent.set_current(agent)
    agent.model.started()  # the server up before the test presses anything
    print("pid", agent.model.running.server.process.pid)
""")
PID = "print('pid', nbagent.current().model.running.server.process.pid)"


def pid_in(texts: list[str]) -> int:
    lines = [line for text in texts for line in text.splitlines() if line.startswith("pid ")]
    assert lines, texts
    return int(lines[-1].split()[1])


def wait_for_streamed_text(client: Any, msg_id: str) -> None:
    """Read the chat cell's outputs until its reply text has begun to stream."""
    deadline = time.monotonic() + STARTED_S
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        data = message["content"].get("data", {})
        if message["msg_type"] in ("display_data", "update_display_data") and (
                data.get("text/plain") and "nbagent-reply" in data.get("text/html", "")):
            return
    raise AssertionError("the reply never began to stream")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie not yet reaped by its (dead) parent's reaper counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


def test_the_stop_button_while_the_model_streams_leaves_its_server_running(
        tmp_path: Path) -> None:
    env = {**os.environ, "NBAGENT_DATA_DIR": str(tmp_path / "data"),
           "NBAGENT_LOCAL_N_CTX": str(WINDOW), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    # killed on the way out (SIGKILL): no atexit runs in the kernel
    with started_kernel(tmp_path, env, timeout=STARTED_S) as (manager, client):
        status, texts, errors = run(client, SETUP, timeout=3 * STARTED_S)
        assert (status, errors) == ("ok", ""), texts
        before = pid_in(texts)

        msg_id = client.execute("%%chat\nTell me a long story about a city by the sea.",
                                allow_stdin=False)  # a notebook's outputs, redrawn in place
        wait_for_streamed_text(client, msg_id)
        manager.interrupt_kernel()  # SIGINT to the kernel's process group, as Jupyter does
        status, texts, errors = collect(client, msg_id, STARTED_S)
        shown = "\n".join(texts)
        assert (status, errors) == ("ok", ""), shown
        assert any(line.startswith("interrupted") for line in shown.splitlines()), shown
        assert not gone(before)

        status, texts, errors = run(client, "%%chat\nSay hello.")
        shown = "\n".join(texts)
        assert (status, errors) == ("ok", ""), shown
        assert "provider may be down" not in shown and "Connection" not in shown, shown
        assert "answered by SmolLM2-135M" in shown, shown  # a reply came, with its footer
        status, texts, errors = run(client, PID)
        assert pid_in(texts) == before  # the same server: it never saw the SIGINT
    deadline = time.monotonic() + 30
    while not gone(before) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert gone(before), "the server outlived its kernel"


def test_a_server_that_died_is_restarted_by_the_next_chat_which_says_so() -> None:
    statuses: list[str] = []
    model = EmbeddedModel(WINDOW, 24)
    agent = Agent(model=model, builtin_tools=False, namespace={}, archive=False,
                  settings=Settings(local_n_ctx=WINDOW))
    agent.events.subscribe(lambda event: statuses.append(event.text)  # type: ignore[attr-defined]
                           if isinstance(event, Status) else None)
    try:
        assert agent.chat("Say hello.").text.strip()
        served = model.running
        assert isinstance(served, LocalModel) and served.server is not None
        process = served.server.process  # type: ignore[attr-defined]
        assert process is not None
        assert os.getsid(process.pid) == process.pid != os.getsid(0)  # a session of its own
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

        statuses.clear()
        again = agent.chat("Say hello again.")
        assert again.text.strip()
        assert ("the local model's server had stopped (exit code -9); restarting it…"
                in statuses), statuses  # on the event stream, as the chat display shows it
        restarted = served.server.process  # type: ignore[attr-defined]
        assert restarted is not None and restarted.pid != process.pid
        assert restarted.poll() is None
    finally:
        if model.running is not None:
            model.running.server.stop()  # type: ignore[attr-defined]
