"""Specs for the demo MCP server over stdio, and a context manager that runs it over
streamable HTTP on a free 127.0.0.1 port until it listens."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEMO = Path(__file__).with_name("demo_server.py")


def stdio_spec(**env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(DEMO)], "env": env}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def http_demo(timeout: float = 30.0, sse: bool = False) -> Iterator[str]:
    """The demo server over streamable HTTP (or SSE); yields its url, stops it afterwards."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(DEMO), "--sse" if sse else "--http",
                                str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not listening(port):
            if process.poll() is not None:
                raise RuntimeError(f"the demo HTTP server exited with {process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError("the demo HTTP server did not listen in time")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/{'sse' if sse else 'mcp'}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:  # a tool still sleeping in a worker thread can hold a graceful stop
                process.wait(3)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited; it only waits for its parent to read its status
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
