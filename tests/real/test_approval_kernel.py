"""The question before an MCP call, in a real python3 kernel (jupyter_client, ipykernel)
with a real MCP server process (the SDK's own server API, written by the test, noting
every call it gets): the user's interrupt at the question cancels that call; the next
call asks again instead of hanging; an answer typed into the interrupted question's box
afterwards answers nothing (the call it asked about never runs); and while the question
waits the tool's time limit does not run out."""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.helpers import execute, printed, python_kernel

pytestmark = pytest.mark.real
jupyter_client = pytest.importorskip("jupyter_client")

SERVER = textwrap.dedent('''\
    import sys
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("ledger")

    @server.tool()
    def book(entry: str) -> str:
        """Book an entry in the ledger."""
        with open(sys.argv[1], "a") as ledger:
            ledger.write(entry + "\\n")
        return "booked " + entry

    server.run()
''')
SETUP = textwrap.dedent("""\
    %load_ext nbagent
    import nbagent
    from nbagent.testing import ScriptedModel, calls, reply
    agent = nbagent.new_session(model=ScriptedModel([
        calls(("book", {"entry": "first"})),
        calls(("book", {"entry": "second"})), reply("declined"),
        calls(("book", {"entry": "third"})),
        calls(("book", {"entry": "fourth"})), reply("declined again"),
        calls(("book", {"entry": "fifth"})), reply("booked"),
    ]), settings=nbagent.Settings(max_context_tokens=32_000, tool_timeout_s=TIMEOUT,
                                  mcp_timeout_s=TIMEOUT))
    agent.add_mcp_server("ledger", {"command": PYTHON, "args": [SERVER, LEDGER]})
    agent.mcp_servers(start=True)
""")


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    with python_kernel(tmp_path) as running:
        yield running


def booked(ledger: Path) -> list[str]:
    return ledger.read_text().split() if ledger.exists() else []


def test_an_interrupt_at_the_question_cancels_the_call_and_no_later_answer_runs_it(
        kernel: tuple[Any, Any], tmp_path: Path) -> None:
    manager, client = kernel
    server, ledger = tmp_path / "ledger_server.py", tmp_path / "ledger.txt"
    server.write_text(SERVER)
    timeout = 3  # seconds: the user's reading time must not count against it
    reply, messages = execute(client, SETUP.replace("PYTHON", repr(sys.executable))
                              .replace("SERVER", repr(str(server)))
                              .replace("LEDGER", repr(str(ledger)))
                              .replace("TIMEOUT", str(timeout)), cell_id="setup")
    assert reply["status"] == "ok", printed(messages)

    # 1. The question waits; the user presses ■ instead of answering.
    reply, messages = execute(client, "%%chat\nbook it", cell_id="c1", allow_stdin=True,
                              on_input=manager.interrupt_kernel)
    assert "interrupted" in str(messages) and booked(ledger) == []
    # 2. The next call asks (no hang), and "n" refuses it.
    reply, messages = execute(client, "%%chat\nbook it now", cell_id="c2", allow_stdin=True,
                              answer="n")
    assert reply["status"] == "ok" and booked(ledger) == []
    assert "the user did not allow book" in str(messages)  # asked, and refused
    # 3. Interrupted again; then "y" is typed into the interrupted question's box.
    execute(client, "%%chat\nbook the third", cell_id="c3", allow_stdin=True,
            on_input=manager.interrupt_kernel)
    client.input("y")  # a stale answer: its question is gone
    time.sleep(2)
    reply, messages = execute(client, "%%chat\nbook the fourth", cell_id="c4",
                              allow_stdin=True, answer="n")
    assert reply["status"] == "ok" and booked(ledger) == []  # neither third nor fourth
    # 4. A slow reader: the question waits past the tool's time limit, then "y" runs it.
    def slow_yes() -> None:
        time.sleep(timeout + 2)
        client.input("y")

    reply, messages = execute(client, "%%chat\nbook the fifth", cell_id="c5",
                              allow_stdin=True, on_input=slow_yes)
    assert reply["status"] == "ok" and booked(ledger) == ["fifth"], printed(messages)
    assert "booked" in str(messages)
