"""`%load_ext nbagent` in a real python3 kernel (jupyter_client, ipykernel): the embedded
model's server starts only for a session that will use it — once the load's cell has run,
so a model chosen in that cell (or configured) starts no llama.cpp process at the load
nor at a chat — and litellm's import runs in the background from the load, finished
before any chat asked for it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil  # ipykernel depends on it
import pytest

from tests.notebook.helpers import execute, python_kernel
from tests.notebook.helpers import printed as cell_text
from tests.openai_stub import StubServer

pytestmark = [pytest.mark.real, pytest.mark.llama]  # the first test starts the embedded server
jupyter_client = pytest.importorskip("jupyter_client")

WAIT_S = 180
SERVER_CHILD = "_server_child.py"  # the embedded server's process runs this script
STATE = ("import json, sys, nbagent\n"
         "print(json.dumps({'litellm': 'litellm' in sys.modules,\n"
         "                  'llama_cpp': 'llama_cpp' in sys.modules}))")


def run(client: Any, code: str) -> tuple[dict[str, Any], str]:
    """Run `code`: the execute reply's content and everything the cell printed."""
    reply, messages = execute(client, code)
    return reply, cell_text(messages)


def state(client: Any) -> dict[str, bool]:
    reply, printed = run(client, STATE)
    assert reply["status"] == "ok", printed
    return dict(json.loads(printed.strip().splitlines()[-1]))


def servers(kernel_pid: int) -> list[psutil.Process]:
    """The embedded model's server processes the kernel started (none for another model)."""
    found = []
    for child in psutil.Process(kernel_pid).children(recursive=True):
        try:
            if any(part.endswith(SERVER_CHILD) for part in child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def poll(check: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (result := check()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.5)
    return result


@contextmanager
def started_kernel(tmp_path: Path, **env: str) -> Iterator[tuple[Any, int]]:
    """A fresh kernel (its client and pid) with nbagent's and OpenAI's settings from `env`
    only (none from the shell that runs the tests)."""
    with python_kernel(tmp_path, settings=env) as (_, client):
        reply, text = run(client, "import os; print(os.getpid())")
        assert reply["status"] == "ok", text
        yield client, int(text.strip())


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer(context=100_000) as server:
        yield server


def test_the_embedded_default_starts_its_server_in_the_background_at_the_load(
        tmp_path: Path) -> None:
    with started_kernel(tmp_path) as (client, pid):
        assert servers(pid) == []
        reply, printed = run(client, "%load_ext nbagent")
        assert reply["status"] == "ok", printed
        reply, printed = run(client, "model = nbagent.current().model\n"
                                     "print(model.loading or model.running is not None)")
        assert reply["status"] == "ok", printed
        assert printed.strip() == "True"  # a start began once the load's cell had run
        (server,) = poll(lambda: servers(pid), "the embedded server's process started")
        reply, printed = run(client, "import time\n"
                                     "while model.loading: time.sleep(0.2)\n"
                                     "print(model.running is not None)")
        assert printed.strip() == "True", printed
        psutil.Process(pid).kill()  # as a crashed kernel: the server ends with its parent
        server.wait(timeout=WAIT_S)


def test_a_model_chosen_in_the_load_cell_starts_no_embedded_server(tmp_path: Path) -> None:
    # the README's pattern: %load_ext, then %nbagent model=… in the same cell
    with started_kernel(tmp_path) as (client, pid):
        reply, printed = run(client, "%load_ext nbagent\n%nbagent model=openai/gpt-4o-mini")
        assert reply["status"] == "ok", printed
        time.sleep(3)  # a warm start would have begun at the cell's end
        reply, printed = run(client, "print(nbagent.current().model.name, "
                                     "'llama_cpp' in __import__('sys').modules)")
        assert printed.split() == ["openai/gpt-4o-mini", "False"], printed
        assert servers(pid) == []


def test_a_session_on_another_model_never_starts_the_embedded_server(
        stub: StubServer, tmp_path: Path) -> None:
    # litellm sends an openai/ model to OPENAI_BASE_URL: the stub on 127.0.0.1
    with started_kernel(tmp_path, NBAGENT_MODEL="openai/gpt-4o-mini",
                        OPENAI_BASE_URL=stub.base_url,
                        OPENAI_API_KEY="sk-test-not-real") as (client, pid):
        assert state(client) == {"litellm": False, "llama_cpp": False}
        reply, printed = run(client, "%load_ext nbagent")
        assert reply["status"] == "ok" and printed == ""
        # litellm arrives in the background, with no chat having run
        poll(lambda: state(client)["litellm"], "litellm imported after the load")
        assert stub.requests == [] and servers(pid) == []
        reply, printed = run(client, "%%chat\nwhich columns does sales have?")
        assert reply["status"] == "ok", printed
        assert stub.requests != []
        assert {body["model"] for body in stub.requests} == {"gpt-4o-mini"}
        assert servers(pid) == []
        assert state(client) == {"litellm": True, "llama_cpp": False}
