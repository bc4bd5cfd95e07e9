"""The embedded model as a newcomer meets it, each in a fresh process: the README's main job
(`python -m nbagent.demo`, the whole command's wall time) and `%load_ext nbagent` to the
first reply of a `%%chat` cell in a real kernel (jupyter_client), to its first streamed
piece and to the cell's end. Run through `bench/embedded.py --parts main_job,load_ext`;
`one_core_busy` is the load both parts and the chat part run under.
"""

from __future__ import annotations

import ast
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]  # the repository: the kernel is started by tests/' helper

MAIN_JOB_TARGET_S = 180.0  # quiet, on 2 cores (issue 31); twice that with a core busy
FIRST_REPLY_TARGET_S = 15.0
SETUP = ("import pandas as pd\n"
         "sales = pd.DataFrame({'region': ['north', 'south', 'east', 'west'],\n"
         "                      'revenue': [1200.5, 980.0, 1430.25, 1010.0],\n"
         "                      'units_sold': [120, 95, 143, 88]})")
QUESTION = "Which columns does sales have?"
# the chat cell's outputs, by their HTML classes (widgets/_chat_lines, widgets/_bundles)
REPLY_CLASS, TOOL_CLASS, STATUS_CLASS = "nbagent-reply", "nbagent-tool", "nbagent-status"
STARTING = "starting the local model"  # the status line renewed each second while it starts
THINKING = "thinking…"  # the status line shown as the chat's first request goes out
SECONDS = ("seconds", "load_s", "thinking_s", "server_wait_s", "first_tool_s", "first_piece_s",
           "reply_s")
COMPACTIONS = re.compile(r"^compactions: (\{.*\}); failures now (\d+)$", re.MULTILINE)


@contextmanager
def one_core_busy(busy: bool) -> Iterator[None]:
    """A child process spinning on one core while the block runs (nothing when quiet)."""
    if not busy:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)  # let it reach the scheduler's steady state
        yield
    finally:
        spinner.kill()
        spinner.wait()


def newcomer_env(data_dir: str) -> dict[str, str]:
    """This environment as a newcomer's: no nbagent setting but a fresh data folder, and no
    LITELLM_LOCAL_MODEL_COST_MAP (nbagent sets it itself)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NBAGENT_") and k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    env["NBAGENT_DATA_DIR"] = data_dir
    return env


def demo_outcome(stdout: str) -> dict[str, Any]:
    """What the main job printed, counted: questions answered, answers stopped with a
    message, compactions by trigger, and the failures in a row it ended with."""
    found = COMPACTIONS.search(stdout)
    lines = stdout.splitlines()
    return {"answers": sum(line.startswith("agent: ") for line in lines),
            "stopped": sum(line.startswith("agent: (stopped)") for line in lines),
            "compactions": ast.literal_eval(found.group(1)) if found else None,
            "failures": int(found.group(2)) if found else None}


def main_job(timeout: float = 1800.0) -> dict[str, Any]:
    """The README's main job in a fresh process: its wall time, exit code and outcome."""
    with tempfile.TemporaryDirectory() as home:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "nbagent.demo"], cwd=home,
                              env=newcomer_env(os.path.join(home, "data")),
                              capture_output=True, text=True, timeout=timeout)
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "exit": done.returncode, **demo_outcome(done.stdout)}


def piece_kind(message: dict[str, Any]) -> str | None:
    """What an iopub message of the chat cell shows: "reply" (reply text), "tool" (a tool's
    line), "starting" (the server's starting line), "thinking" (the line shown as a request
    goes out), or None (anything else)."""
    if message["msg_type"] not in ("display_data", "update_display_data"):
        return None
    data = message["content"].get("data", {})
    html = str(data.get("text/html", ""))
    if REPLY_CLASS in html:
        return "reply"
    if TOOL_CLASS in html:
        return "tool"
    status = str(data.get("text/plain", "")) if STATUS_CLASS in html else ""
    if status.startswith(STARTING):
        return "starting"
    return "thinking" if status.startswith(THINKING) else None


def send(client: Any, code: str, cell: int) -> str:
    """Send `code` as a notebook does (its cell named in the metadata, so the chat's outputs
    are redrawn in place, as JupyterLab shows them); stdin off, so nothing can wait on it."""
    content = {"code": code, "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
    message = client.session.msg("execute_request", content,
                                 metadata={"cellId": f"bench-cell-{cell}"})
    client.shell_channel.send(message)
    return str(message["header"]["msg_id"])


def _until_idle(client: Any, msg_id: str, deadline: float,
                on_message: Any = None) -> None:
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("the cell did not finish in time")
        try:
            message = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return
        if on_message is not None:
            on_message(message)


def first_reply(question: str = QUESTION, timeout: float = 600.0) -> dict[str, Any]:
    """A fresh kernel (started, then a DataFrame made: not timed); then seconds from sending
    `%load_ext nbagent` to the load cell's end, to the `%%chat` reply's first streamed piece
    and to the chat cell's end, sent right after the load as a user would."""
    if str(ROOT) not in sys.path:  # run as a script, only bench/ is on the path
        sys.path.insert(0, str(ROOT))
    from tests.notebook.helpers import started_kernel  # the one way a kernel is started

    with tempfile.TemporaryDirectory() as home:
        # killed on the way out: the server ends with it (its stdin pipe)
        with started_kernel(home, newcomer_env(os.path.join(home, "data")),
                            timeout=timeout) as (_, client):
            deadline = time.monotonic() + timeout
            _until_idle(client, send(client, SETUP, 1), deadline)
            first: dict[str, float] = {}  # the first time each kind of piece showed
            starting: list[float] = []  # each renewal of the starting line
            text: list[str] = []

            def seen(message: dict[str, Any]) -> None:
                kind = piece_kind(message)
                if kind is not None:
                    first.setdefault(kind, time.perf_counter())
                if kind == "starting":
                    starting.append(time.perf_counter())
                elif kind == "reply":
                    text[:] = [message["content"]["data"].get("text/plain", "")]

            started = time.perf_counter()
            _until_idle(client, send(client, "%load_ext nbagent", 2), deadline)
            loaded = time.perf_counter()
            _until_idle(client, send(client, f"%%chat\n{question}", 3), deadline, seen)
            ended = time.perf_counter()

    def since(at: float | None) -> float | None:
        return None if at is None else at - started

    # the starting line is renewed about every second: its last renewal is when the chat
    # stopped waiting for the server, to within a second (None: it was up before the chat)
    return {"load_s": loaded - started, "reply_s": ended - started,
            "thinking_s": since(first.get("thinking")),
            "server_wait_s": since(starting[-1] if starting else None),
            "first_tool_s": since(first.get("tool")), "first_piece_s": since(first.get("reply")),
            "reply": text[0] if text else ""}


def measure_session(parts: list[str], repeats: int, say: Any) -> dict[str, Any]:
    """The main job and the first reply, quiet and with one core busy, `repeats` times."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(repeats):
        for busy in (False, True):
            load = "busy" if busy else "quiet"
            with one_core_busy(busy):
                if "main_job" in parts:
                    runs.setdefault(f"main_job {load}", []).append(main_job())
                    say(f"  main job {load}: {runs[f'main_job {load}'][-1]['seconds']:.0f} s")
                if "load_ext" in parts:
                    runs.setdefault(f"load_ext {load}", []).append(first_reply())
                    last = runs[f"load_ext {load}"][-1]
                    say(f"  %load_ext {load}: reply {last['reply_s']:.1f} s, first piece "
                        f"{last['first_piece_s'] or float('nan'):.1f} s")
    return {"repeats": repeats, "runs": runs, "median": {
        name: {key: statistics.median(values) for key in SECONDS
               if (values := [r[key] for r in results if r.get(key) is not None])}
        for name, results in runs.items()}}


def _cell(median: dict[str, Any], name: str, key: str) -> str:
    value = median.get(name, {}).get(key)
    return "—" if value is None else f"{value:.1f}"


def _ratio(median: dict[str, Any], name: str, key: str) -> str:
    quiet, busy = (median.get(f"{name} {load}", {}).get(key) for load in ("quiet", "busy"))
    return "—" if not quiet or busy is None else f"{busy / quiet:.2f}×"


def session_table(result: dict[str, Any]) -> str:
    median, runs = result["median"], result["runs"]
    rows = []
    if "main_job quiet" in median:
        outcomes = {name: results for name, results in runs.items() if name.startswith("main")}
        failed = sum(r["exit"] != 0 for results in outcomes.values() for r in results)
        rows.append(f"| README main job, whole command (s) | "
                    f"{_cell(median, 'main_job quiet', 'seconds')} | "
                    f"{_cell(median, 'main_job busy', 'seconds')} | "
                    f"{_ratio(median, 'main_job', 'seconds')} | ≤ {MAIN_JOB_TARGET_S:.0f} / "
                    f"≤ {2 * MAIN_JOB_TARGET_S:.0f} |")
        told = "; ".join(f"{name.split()[1]}: {r['answers']} answers ({r['stopped']} stopped), "
                         f"compactions {r['compactions']}, {r['failures']} failures at the end"
                         for name, results in outcomes.items() for r in results[:1])
        notes = [f"The main job ran {sum(map(len, outcomes.values()))} times, {failed} "
                 f"failed ({told})."]
    else:
        notes = []
    if "load_ext quiet" in median:
        for key, label in (("load_s", "`%load_ext nbagent` cell returned"),
                           ("thinking_s", "`%load_ext` → the chat's `thinking…` line"),
                           ("server_wait_s", "`%load_ext` → the chat stops waiting for the "
                                             "server, ±1"),
                           ("first_tool_s", "`%load_ext` → first tool line"),
                           ("first_piece_s", "`%load_ext` → first streamed piece of the reply"),
                           ("reply_s", "`%load_ext` → first reply complete")):
            target = (f"≤ {FIRST_REPLY_TARGET_S:.0f} / ≤ {2 * FIRST_REPLY_TARGET_S:.0f}"
                      if key == "reply_s" else "")
            rows.append(f"| {label} (s) | {_cell(median, 'load_ext quiet', key)} | "
                        f"{_cell(median, 'load_ext busy', key)} | "
                        f"{_ratio(median, 'load_ext', key)} | {target} |")
        replies = [r["reply"].strip().replace("\n", " ")[:120]
                   for r in runs.get("load_ext quiet", [])[:1]]
        notes.append(f"The question: \"{QUESTION}\" about a 4-row DataFrame, sent as a "
                     f"notebook does right after the load in a fresh kernel (its start not "
                     f"timed). Until `thinking…` the chat waits for what the load began in the "
                     f"background: litellm's import and, if still starting, the server "
                     f"(\"—\": the server was up before the chat asked). A quiet reply: "
                     f"\"{replies[0] if replies else ''}\".")
    if not rows:
        return ""
    return ("| in a fresh process | quiet | one core busy | busy / quiet | target (s): quiet / "
            "busy |\n|---|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n\n"
            + " ".join(n for n in notes if n) + "\n")
