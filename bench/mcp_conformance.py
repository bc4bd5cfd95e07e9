"""The official MCP conformance suite's client scenarios (npm
`@modelcontextprotocol/conformance`) against nbagent's MCP client.

    python bench/mcp_conformance.py --run --conformance DIR   # every client scenario:
                                                             # a table, docs/tools.md updated
    python bench/mcp_conformance.py URL                       # the client the suite starts

The suite needs Node 22: `npm install node@22 @modelcontextprotocol/conformance` in a
folder (DIR above) brings both. For each scenario the suite starts a test server and runs
this file with the server's url appended (and `MCP_CONFORMANCE_SCENARIO` set). The client
is the agent's own path: `McpServers` with the url as a streamable HTTP server, its tools
listed and each called once with arguments read from its schema, as a model would. A
server's request for input goes through the agent's own questions (`nbagent.approval`):
the adapter plays a user who answers them, accepting and leaving each field at the
default the server offers (pressing Enter).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "tools.md"
SCENARIO_TIMEOUT_S = 120


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments a model might send: each required (or defaulted) property filled in."""
    values = {"integer": 2, "number": 3, "string": "test", "boolean": True, "array": [],
              "object": {}}
    properties = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        if "default" in prop:
            arguments[name] = prop["default"]
        elif name in schema.get("required", []) or not schema.get("required"):
            arguments[name] = values.get(str(prop.get("type")), "test")
    return arguments


def user(question: str) -> str:
    """A user at the input box: yes to a question, Enter (the default) at a field."""
    sys.stderr.write(f"asked: {question}\n")
    return "y" if question.rstrip().endswith("[c] cancel:") else ""


def client(url: str) -> int:
    """Connect as the agent does, list the tools, call each once; 0 when it connected."""
    from nbagent.agent.mcp import _oauth
    from nbagent.agent.mcp._servers import McpServers
    from nbagent.approval import Approval

    def say(line: str) -> None:
        sys.stderr.write(f"status: {line}\n")

    def headless(sign_in_url: str) -> None:
        """The browser's part of a sign-in: the test server signs in at once and redirects
        to our listener, which this follows."""
        import httpx

        page = httpx.get(sign_in_url, follow_redirects=False, timeout=10)
        back = page.headers.get("location")
        if back:
            httpx.get(back, timeout=10)

    _oauth.OPEN_URL = headless
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    oauth: dict[str, Any] = {}
    if context.get("client_id"):  # a client registered beforehand
        oauth = {"clientId": context["client_id"], "clientSecret": context.get("client_secret")}
    spec = {"url": url, "oauth": oauth or True}
    approval = Approval(user, allowed=[("mcp", "conformance")])  # calls run unasked
    with McpServers({"conformance": spec}, on_status=say, start_timeout=20,
                    call_timeout=30, approval=approval) as servers:
        tools = servers.tools()
        sys.stdout.write(f"tools: {[t.name for t in tools]}\n")
        for made in tools:
            text, is_error = servers.call("conformance", made.remote_name,
                                          arguments_for(made.input_schema))
            sys.stdout.write(f"{made.name}: {'error: ' if is_error else ''}{text[:200]}\n")
        connected = not any("could not start" in line for line in servers.describe())
    return 0 if tools or connected else 1


def scenarios(conformance: Path) -> list[str]:
    listed = subprocess.run([str(conformance / "node_modules/.bin/conformance"), "list"],
                            capture_output=True, text=True, timeout=120, env=_node_env(
                                conformance), check=True).stdout
    client_part = listed.split("Client scenarios", 1)[1]
    return re.findall(r"^\s+- (\S+)", client_part, re.MULTILINE)


def _node_env(conformance: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{conformance / 'node_modules/.bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CHECK = re.compile(r"^\S+ \[\s*([^\]]+?)\s*\] (SUCCESS|FAILURE|WARNING|INFO)\s+(.*)$",
                    re.MULTILINE)


def run_scenario(conformance: Path, scenario: str, work: Path) -> dict[str, Any]:
    """One scenario: its checks' outcomes (read from the suite's report) and the first
    failure's message."""
    command = f"{sys.executable} {Path(__file__).resolve()}"
    try:
        done = subprocess.run(
            [str(conformance / "node_modules/.bin/conformance"), "client", "--command",
             command, "--scenario", scenario, "--timeout", str(SCENARIO_TIMEOUT_S * 500)],
            capture_output=True, text=True, timeout=SCENARIO_TIMEOUT_S, cwd=work,
            env=_node_env(conformance))
        report = _ANSI.sub("", done.stdout + done.stderr)
    except subprocess.TimeoutExpired:
        report = "timed out"
    checks = [(name, status, message) for name, status, message in _CHECK.findall(report)
              if status in ("SUCCESS", "FAILURE")]
    failed = [(name, message) for name, status, message in checks if status == "FAILURE"]
    passed = "OVERALL: PASSED" in report
    detail = f"{failed[0][0]}: {failed[0][1]}" if failed else ""
    if not checks and not passed:
        detail = (report.strip().splitlines() or [""])[-1]
    return {"scenario": scenario, "passed": passed, "checks": len(checks),
            "failed": len(failed), "detail": detail[:200]}


def write_section(body: str) -> None:
    machine = (f"{platform.machine()}, {platform.python_implementation()} "
               f"{platform.python_version()}")
    block = (f"<!-- bench:mcp_conformance -->\n_Written by `bench/mcp_conformance.py` on "
             f"{machine}._\n\n{body.strip()}\n<!-- /bench:mcp_conformance -->")
    text = DOC.read_text(encoding="utf-8")
    pattern = re.compile(r"<!-- bench:mcp_conformance -->.*?<!-- /bench:mcp_conformance -->",
                         re.S)
    text = (pattern.sub(lambda _: block, text) if pattern.search(text)
            else f"{text.rstrip()}\n\n{block}\n")
    DOC.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="the test server (the suite passes it)")
    parser.add_argument("--run", action="store_true", help="run every client scenario")
    parser.add_argument("--conformance", type=Path, help="the folder with node@22 and the "
                        "suite installed by npm")
    parser.add_argument("--only", nargs="*", help="these scenarios only")
    options = parser.parse_args()
    if not options.run:
        if not options.url:
            parser.error("give the server's url, or --run")
        sys.exit(client(options.url))
    if options.conformance is None:
        parser.error("--run needs --conformance DIR")
    names = options.only or scenarios(options.conformance)
    results = []
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            result = run_scenario(options.conformance, name, Path(work))
            sys.stdout.write(f"{'PASS' if result['passed'] else 'FAIL'} {name} "
                             f"{result['detail']}\n")
            results.append(result)
    if options.only:
        return
    lines = ["| scenario | result | the first failing check |", "|---|---|---|"]
    lines += [f"| `{r['scenario']}` | {'passes' if r['passed'] else 'fails'} | "
              f"{'' if r['passed'] else r['detail'].replace('|', '/')} |" for r in results]
    passed = sum(r["passed"] for r in results)
    version = subprocess.run([str(options.conformance / "node_modules/.bin/node"),
                              "--version"], capture_output=True, text=True).stdout.strip()
    suite = json.loads((options.conformance / "node_modules/@modelcontextprotocol/"
                        "conformance/package.json").read_text())["version"]
    write_section(f"{passed} of {len(results)} client scenarios of "
                  f"`@modelcontextprotocol/conformance` {suite} pass (Node {version}):\n\n"
                  + "\n".join(lines))


if __name__ == "__main__":
    main()
