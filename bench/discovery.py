"""What looking for local models costs: `discover()` (the four default loopback ports
probed at once, then the GGUF caches) when nothing runs, when all four ports hold a
server that accepts and never answers (the worst case: one bounded timeout), and the
cached answer every later call gets.

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
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from nbagent.agent.models import _discovery  # noqa: E402
from nbagent.agent.models._local_runtimes import DEFAULT_SERVERS, PROBE_S  # noqa: E402

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


def measure() -> dict[str, Any]:
    busy = [runtime for runtime, root in DEFAULT_SERVERS.items() if listening(root)]
    nothing = timed(lambda: _discovery.discover())
    silent = []
    for _ in DEFAULT_SERVERS:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        silent.append(sock)
    roots = {runtime: f"http://127.0.0.1:{sock.getsockname()[1]}"
             for runtime, sock in zip(DEFAULT_SERVERS, silent, strict=True)}
    hung = timed(lambda: _discovery.discover(roots, folders=[]), runs=5)
    for sock in silent:
        sock.close()
    _discovery.find_local_models(refresh=True)
    cached = timed(_discovery.find_local_models, runs=1000)
    return {"nothing_running": nothing, "four_hung_servers": hung, "cached": cached,
            "probe_timeout_s": PROBE_S, "ports_in_use": busy,
            "python": platform.python_version(), "machine": platform.machine()}


def table(figures: dict[str, Any]) -> str:
    rows = [("nothing running (4 ports refused, caches walked)", figures["nothing_running"]),
            ("4 servers that accept and never answer", figures["four_hung_servers"]),
            ("every later call (cached)", figures["cached"])]
    lines = ["| case | median | worst |", "|---|---:|---:|"]
    lines += [f"| {name} | {f['median_ms']:.2f} ms | {f['max_ms']:.2f} ms |" for name, f in rows]
    note = (f"Probe timeout {figures['probe_timeout_s']} s; Python {figures['python']} on "
            f"{figures['machine']}, 2 shared cores; `python bench/discovery.py`.")
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
