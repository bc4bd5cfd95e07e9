"""What this machine gives the embedded server: its threads (never every core: llama.cpp's
workers spin while they wait), a free loopback port, and whether llama.cpp's AMX path
must be off (a CPU that advertises AMX in a VM that does not enable it).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def amx_advertised(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """True when the CPU says it has AMX tiles: llama.cpp then uses them, which faults in
    VMs that advertise AMX without enabling it; the server runs without them (its gain
    for the small models served here is small)."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as info:
            return any(line.startswith("flags") and " amx_tile" in line for line in info)
    except OSError:
        return False


def server_threads(cores: int | None = None) -> int:
    """Threads for the server's generation and prompt reading: half the cores this process
    may run on, at least one. llama.cpp's worker threads wait for each other by spinning
    (llama-cpp-python 0.3 cannot attach a passively waiting threadpool), so with a thread
    on every core one busy process (a browser, a build, the kernel streaming the reply)
    stalls every step: 127.9 s instead of 10.4 s for one request on 2 cores, measured.
    A 135M model gains little from more threads; see bench/embedded.py."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
    return max(1, cores // 2)


def free_port(wanted: int = 0) -> int:
    """`wanted` if it can be bound now (a restart keeps its address), else any free port."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            sock.bind(("127.0.0.1", wanted))
        except OSError:
            sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
