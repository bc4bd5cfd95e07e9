"""What an MCP tool call adds over the server's own time: the median (and 90th
percentile) of 200 calls to an echo tool, each call's time minus the time measured
inside the tool, over stdio and over streamable HTTP on 127.0.0.1.

    python bench/mcp_overhead.py          # prints a table, updates docs/tools.md
    python bench/mcp_overhead.py --json

Three paths: `McpServers.call` (our thread hop, the SDK's JSON-RPC, the pipe or the
socket, the server's dispatch), and the same call as the agent makes it, through
`run_tool` (schema check, worker thread, capping). The server is the tests' demo server,
written with the SDK's own `MCPServer`.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from nbagent.agent.mcp._servers import McpServers  # noqa: E402
from nbagent.agent.tools._tool import OutputStore, run_tool  # noqa: E402
from tests.agent.mcp.servers.launch import http_demo, stdio_spec  # noqa: E402

DOC = ROOT / "docs" / "tools.md"
CALLS, WARMUP = 200, 20


def overheads(call: Callable[[str], str]) -> list[float]:
    """Milliseconds each call took beyond the tool's own time."""
    for n in range(WARMUP):
        call(f"warm {n}")
    spent: list[float] = []
    for n in range(CALLS):
        start = time.perf_counter()
        text = call(f"hello {n}")
        total = time.perf_counter() - start
        echoed, _, inside = text.rpartition("\t")
        assert echoed == f"hello {n}", text
        spent.append((total - float(inside)) * 1000)
    return spent


def measure(servers: McpServers, name: str) -> dict[str, dict[str, float]]:
    tools = {t.name: t for t in servers.tools()}
    store = OutputStore()

    def direct(text: str) -> str:
        reply, is_error = servers.call(name, "echo", {"text": text})
        assert not is_error, reply
        return reply

    def agent_path(text: str) -> str:
        reply, ok, _ = run_tool(tools, "echo", json.dumps({"text": text}), call_id="c",
                                store=store, default_cap=100_000, timeout=60)
        assert ok, reply
        return reply

    rows = {}
    for label, call in (("McpServers.call", direct), ("run_tool (the agent's path)", agent_path)):
        spent = sorted(overheads(call))
        rows[label] = {"median_ms": statistics.median(spent),
                       "p90_ms": spent[int(len(spent) * 0.9)]}
    return rows


def write_section(body: str) -> None:
    machine = (f"{platform.machine()}, {platform.python_implementation()} "
               f"{platform.python_version()}")
    block = (f"<!-- bench:mcp_overhead -->\n_Written by `bench/mcp_overhead.py` on {machine}._"
             f"\n\n{body.strip()}\n<!-- /bench:mcp_overhead -->")
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Tools\n"
    pattern = re.compile(r"<!-- bench:mcp_overhead -->.*?<!-- /bench:mcp_overhead -->", re.S)
    text = (pattern.sub(lambda _: block, text) if pattern.search(text)
            else f"{text.rstrip()}\n\n{block}\n")
    DOC.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    options = parser.parse_args()
    results: dict[str, Any] = {}
    with McpServers({"demo": stdio_spec()}) as servers:
        results["stdio"] = measure(servers, "demo")
    with http_demo() as url, McpServers({"web": {"url": url}}) as servers:
        results["streamable HTTP"] = measure(servers, "web")
    if options.json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
        return
    lines = ["| transport | path | median overhead | 90th percentile |",
             "|---|---|---:|---:|"]
    for transport, rows in results.items():
        for label, figures in rows.items():
            lines.append(f"| {transport} | {label} | {figures['median_ms']:.2f} ms | "
                         f"{figures['p90_ms']:.2f} ms |")
    table = "\n".join(lines)
    sys.stdout.write(table + "\n")
    write_section(f"Overhead of one MCP tool call over the tool's own time, {CALLS} calls to "
                  f"an echo tool after {WARMUP} warm-up calls (server and client on the "
                  f"same machine, 2 shared cores; the 90th percentile moves with the other load):"
                  f"\n\n{table}")


if __name__ == "__main__":
    main()
