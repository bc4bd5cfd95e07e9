"""What looking for local models costs: `discover()` (the four default loopback ports
probed at once while the GGUF caches are walked) when nothing runs, when all four ports
hold a server that accepts and never answers, when all four drip a byte every 100 ms
(each would hold a reader for 30 s), and the cached answer every later call gets.

    python bench/discovery.py          # prints a table, updates docs/models.md
    python bench/discovery.py --json
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from nbagent.agent.models import _discovery  # noqa: E402
from nbagent.agent.models._local_runtimes import (  # noqa: E402
    DEFAULT_SERVERS,
    PROBE_S,
    SERVER_BUDGET_S,
)

DOC = ROOT / "docs" / "models.md"
RUNS = 20
BEGIN, END = "<!-- discovery figures -->", "<!-- /discovery figures -->"


def timed(run: Callable[[], object], runs: int = RUNS) -> dict[str, float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - started)
    return {"median_ms": statistics.median(seconds) * 1000, "max_ms": max(seconds) * 1000}


def listening(root: str) -> bool:
    host, port = root.removeprefix("http://").rsplit(":", 1)
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, int(port))) == 0


def hostile(drip: bool) -> tuple[dict[str, str], Callable[[], None]]:
    """Four loopback services, one per runtime: silent ones accept and never answer;
    dripping ones answer 200 and then send a header byte every 100 ms for 30 s."""
    stop = threading.Event()
    sockets = []

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                if drip:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
                    for _ in range(300):
                        conn.sendall(b" ")
                        if stop.wait(0.1):
                            return
                else:
                    stop.wait(30)
            except OSError:
                return  # the probe hung up

    def accept(sock: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    for _ in DEFAULT_SERVERS:
        sock = socket.create_server(("127.0.0.1", 0))
        sockets.append(sock)
        threading.Thread(target=accept, args=(sock,), daemon=True).start()

    def close() -> None:
        stop.set()
        for sock in sockets:
            sock.close()

    return ({runtime: f"http://127.0.0.1:{sock.getsockname()[1]}"
             for runtime, sock in zip(DEFAULT_SERVERS, sockets, strict=True)}, close)


def measure() -> dict[str, Any]:
    busy = [runtime for runtime, root in DEFAULT_SERVERS.items() if listening(root)]
    nothing = timed(lambda: _discovery.discover())
    figures = {}
    for case, drip in (("four_hung_servers", False), ("four_dripping_servers", True)):
        roots, close = hostile(drip)

        def look(roots: dict[str, str] = roots) -> object:
            return _discovery.discover(roots, folders=[])

        figures[case] = timed(look, runs=5)
        close()
    _discovery.find_local_models(refresh=True)
    cached = timed(_discovery.find_local_models, runs=1000)
    return {"nothing_running": nothing, **figures, "cached": cached,
            "probe_timeout_s": PROBE_S, "server_budget_s": SERVER_BUDGET_S,
            "bound_s": _discovery.DISCOVERY_S, "ports_in_use": busy,
            "python": platform.python_version(), "machine": platform.machine()}


def table(figures: dict[str, Any]) -> str:
    rows = [("nothing running (4 ports refused, caches walked)", figures["nothing_running"]),
            ("4 servers that accept and never answer", figures["four_hung_servers"]),
            ("4 servers that drip a byte every 100 ms (30 s each)",
             figures["four_dripping_servers"]),
            ("every later call (cached)", figures["cached"])]
    lines = ["| case | median | worst |", "|---|---:|---:|"]
    lines += [f"| {name} | {f['median_ms']:.2f} ms | {f['max_ms']:.2f} ms |" for name, f in rows]
    note = (f"Each request at most {figures['probe_timeout_s']} s in all, each server at most "
            f"{figures['server_budget_s']} s, the whole look at most {figures['bound_s']} s; "
            f"Python {figures['python']} on {figures['machine']}, 2 shared cores; "
            "`python bench/discovery.py`.")
    if figures["ports_in_use"]:
        note += f" Ports in use during the run: {', '.join(figures['ports_in_use'])}."
    return "\n".join(lines) + "\n\n" + note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    figures = measure()
    if parser.parse_args().json:
        print(json.dumps(figures, indent=2))
        return
    text = table(figures)
    print(text)
    if DOC.exists():
        doc = DOC.read_text(encoding="utf-8")
        block = f"{BEGIN}\n{text}\n{END}"
        DOC.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, doc,
                              flags=re.DOTALL), encoding="utf-8")


if __name__ == "__main__":
    main()
