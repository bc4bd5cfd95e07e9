"""Interrupting a real kernel while a tool runs leaves a session that chats on and resumes.

A python3 kernel (jupyter_client, ipykernel) runs `%%chat` with a scripted model whose tool
sleeps; the test presses "Interrupt kernel" while it sleeps, then runs the next `%%chat`
and resumes the archive.
"""

from __future__ import annotations

import queue
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.helpers import SharedKernel

pytestmark = pytest.mark.real
jupyter_client = pytest.importorskip("jupyter_client")

STARTED_S = 120  # how long a kernel may take to start, or a cell to run, on a busy machine


def run(client: Any, code: str, *, timeout: float = STARTED_S) -> tuple[str, list[str], str]:
    """Run `code`; return the execute reply's status, the text of every output (streams,
    displays and their updates, errors' tracebacks) and the names of any errors."""
    msg_id = client.execute(code)
    return collect(client, msg_id, timeout)


def collect(client: Any, msg_id: str, timeout: float) -> tuple[str, list[str], str]:
    texts: list[str] = []
    errors: list[str] = []
    streaming = False
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"the cell did not finish within {timeout} s: {texts}")
        try:
            message = client.get_iopub_msg(timeout=remaining)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        joined, streaming = streaming, kind == "stream"
        if kind == "stream" and joined:  # a reply streamed in pieces reads as one text
            texts[-1] += content["text"]
        elif kind == "stream":
            texts.append(content["text"])
        elif kind in ("display_data", "update_display_data", "execute_result"):
            texts.append(str(content["data"].get("text/plain", "")))
        elif kind == "error":
            errors.append(content["ename"])
            texts.append("\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=timeout)
    return reply["content"]["status"], texts, ",".join(errors)


def setup_code(marker: Path, session: str = "") -> str:
    """The setup cell: a scripted session whose tool sleeps (`session`: its id), current
    before `%load_ext nbagent` (a load with none warms the embedded model's server)."""
    return textwrap.dedent(f"""
        import time
        from pathlib import Path
        import nbagent
        from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, reply

        def sleepy() -> str:
            \"\"\"Think for a long time.\"\"\"
            Path({str(marker)!r}).write_text("sleeping")
            time.sleep(30)
            return "woke up"

        agent = nbagent.Agent(
            model=ScriptedModel([calls(("sleepy", {{}})), reply("still here")]),
            tools=[sleepy], builtin_tools=False, namespace={{}},
            summarize=ScriptedSummarizer(default="notes"), session_id={session or None!r})
        nbagent.set_current(agent)
        %load_ext nbagent
    """)


RESUME = textwrap.dedent("""
    path = nbagent.current().session.archive.path
    before = nbagent.current().history.messages
    nbagent.current().session.close()
    resumed = nbagent.Agent.resume(path, model=ScriptedModel([reply("resumed")]),
                                   builtin_tools=False, namespace={})
    nbagent.validate_messages(resumed.history.messages)
    resumed.history.check_ready()
    print("same history:", resumed.history.messages == before)
    print("tool results:", [m["content"] for m in resumed.history if m["role"] == "tool"])
    print("resumed says:", resumed.chat("are you back?").text)
    resumed.session.close()
""")



@pytest.fixture
def kernel(module_kernel: SharedKernel, request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """The module's kernel for one test, fresh (`SharedKernel`)."""
    with module_kernel.turn(request) as running:
        yield running


def sleeping_chat(client: Any, setup: str, marker: Path) -> str:
    """Run `setup`, then start `%%chat` and return once its tool sleeps: the chat's msg_id."""
    status, texts, errors = run(client, setup)
    assert (status, errors) == ("ok", ""), texts
    msg_id: str = client.execute("%%chat\nplease think about it")
    deadline = time.monotonic() + STARTED_S
    while not marker.exists():
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.05)
    return msg_id


def test_interrupting_the_kernel_while_a_tool_runs_leaves_a_session_that_goes_on(
        kernel: tuple[Any, Any], tmp_path: Path) -> None:
    manager, client = kernel
    marker = tmp_path / "sleeping"
    msg_id = sleeping_chat(client, setup_code(marker), marker)
    manager.interrupt_kernel()
    status, texts, errors = collect(client, msg_id, STARTED_S)
    shown = "\n".join(texts)
    assert (status, errors) == ("ok", ""), shown
    assert "Traceback" not in shown and "KeyboardInterrupt" not in shown, shown
    lines = [line for line in shown.splitlines() if line.startswith("interrupted")]
    assert lines == ["interrupted — the session is intact; run the cell again to retry"]

    status, texts, errors = run(client, "%%chat\nare you still there?")
    assert (status, errors) == ("ok", ""), texts
    assert "still here" in "\n".join(texts)

    status, texts, errors = run(client, RESUME)
    shown = "\n".join(texts)
    assert (status, errors) == ("ok", ""), shown
    assert "same history: True" in shown
    assert "tool results: ['Interrupted: this tool call did not finish" in shown
    assert "resumed says: resumed" in shown


def test_restarting_the_kernel_while_a_tool_runs_leaves_a_session_that_resumes(
        kernel: tuple[Any, Any], tmp_path: Path) -> None:
    manager, client = kernel
    marker = tmp_path / "sleeping"
    sleeping_chat(client, setup_code(marker, session="dying"), marker)
    manager.restart_kernel(now=True)
    client.wait_for_ready(timeout=STARTED_S)
    status, texts, errors = run(client, textwrap.dedent("""
        import nbagent
        from nbagent.testing import ScriptedModel, reply
        nbagent.set_current(nbagent.Agent.resume(
            "dying", model=ScriptedModel([reply("back again")]), builtin_tools=False,
            namespace={}))
        %load_ext nbagent
    """))
    assert (status, errors) == ("ok", ""), texts
    status, texts, errors = run(client, "%%chat\nare you back?")
    assert (status, errors) == ("ok", ""), texts
    assert "back again" in "\n".join(texts)
