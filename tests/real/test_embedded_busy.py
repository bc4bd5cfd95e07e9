"""The embedded model with one core busy, as a browser, a build or the kernel itself make it
on a laptop: its server runs fewer worker threads than the machine has cores (waiting
workers never spin against the busy one), and a chat still streams its reply piece by piece,
stops at its bound and leaves the server serving. How long it takes is the bench's
(bench/embedded.py: busy / quiet, and beside llama.cpp's own time); this checks behaviour."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from nbagent.agent.models import server_threads
from nbagent.local import LocalServer

pytestmark = [pytest.mark.real, pytest.mark.llama]
ASK = [{"role": "user", "content": "Tell me a long story about a data analyst."}]


@contextmanager
def one_core_busy() -> Iterator[None]:
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def test_with_a_core_busy_the_server_streams_a_bounded_reply_and_keeps_serving() -> None:
    cores = os.cpu_count() or 1
    with one_core_busy(), LocalServer(2048) as server:
        assert server.process is not None
        with open(f"/proc/{server.process.pid}/cmdline", "rb") as file:
            command = file.read().decode().split("\0")
        threads = int(command[command.index("--n_threads") + 1])
        assert threads == server_threads(cores) <= max(1, cores // 2)
        model = server.model(max_tokens=24)
        pieces: list[str] = []
        reply = model.complete(ASK, [], on_text=pieces.append)
        text = str(reply.message.get("content") or "")
        assert len(pieces) > 1 and "".join(pieces) == text  # streamed, not at the end
        assert reply.finish_reason == "length"  # stopped at its bound, said so
        again = model.complete(ASK, [], on_text=None)  # the server still serves
        assert again.message.get("content") and server.alive
