"""One context-state check (tracker count + context state) must not grow with the history.

    python bench/context_check.py   # prints a table, updates docs/performance.md

Also what loading nbagent costs a fresh interpreter (CPU, wall, modules), beside the tree
before issue 44 (target: `import nbagent` under 0.2 s of CPU).
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from report import write_section

from nbagent import History, Settings, Usage, context_state, thresholds
from nbagent.engine import TokenTracker

ROOT = Path(__file__).parents[1]
MODEL = "bench-model"
SIZES = (100, 1_000, 10_000, 100_000)


def build(size: int) -> History:
    history = History([{"role": "system", "content": "You analyse data."}])
    for t in range((size - 1) // 2):
        history.append({"role": "user", "content": f"question {t}: what is the mean of col_{t}?"})
        history.append({"role": "assistant", "content": f"The mean of col_{t} is {t * 0.37:.3f}."})
    return history


def check_seconds(histories: dict[int, History], repeats: int = 2_000) -> dict[int, float]:
    """Best time per check for each size; sizes interleaved so machine drift hits all alike."""
    settings = Settings(max_context_tokens=200_000)
    limits = thresholds(MODEL, settings=settings, model_info=None)
    trackers = {}
    for size, history in histories.items():
        trackers[size] = tracker = TokenTracker()
        tracker.record_usage(history, Usage(input_tokens=history.estimated_tokens), model=MODEL)
        history.append({"role": "user", "content": "and the median?"})
    best = dict.fromkeys(histories, float("inf"))
    gc.disable()  # as timeit does: a collection over a 100K-message heap is not the check's cost
    for _ in range(7):
        for size, history in histories.items():
            tracker = trackers[size]
            start = time.perf_counter()
            for _ in range(repeats):
                context_state(MODEL, tracker.count(history, model=MODEL), limits=limits)
            best[size] = min(best[size], (time.perf_counter() - start) / repeats)
    gc.enable()
    return best


# What a fresh interpreter pays to load nbagent, at two stages: the import alone, and every
# exported name used plus a new agent (what a first chat builds before its request).
STAGES = {
    "`import nbagent`": "import nbagent",
    "every exported name and a new `Agent`": (
        "from nbagent import *\nfrom nbagent.testing import ScriptedModel\n"
        "Agent(model=ScriptedModel(['hi']), namespace={}, archive=False)"),
}
BEFORE = "bf345d9"  # main before issue 44 made the import light: measured beside, same run
PROBE = """import json, sys, time
base, cpu, wall = set(sys.modules), time.process_time(), time.perf_counter()
{stage}
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
new = set(sys.modules) - base
tops = {{m.partition(".")[0] for m in new}} - set(sys.stdlib_module_names) - {{"nbagent"}}
print(json.dumps([cpu, wall, len(new), sorted(m for m in tops if not m.startswith("_"))]))
"""


def import_costs(tree: Path | None, runs: int, env: dict[str, str]) -> dict[str, Any]:
    """Per stage: median CPU and wall seconds, modules loaded and the third-party packages
    among them, in fresh interpreters importing nbagent from `tree` (None: this checkout)."""
    where = str(tree or ROOT)
    env = {**env, "PYTHONPATH": where}
    costs: dict[str, Any] = {}
    for name, stage in STAGES.items():
        code = PROBE.format(stage=stage)
        subprocess.run([sys.executable, "-c", code], cwd=where, env=env, check=True,
                       capture_output=True)  # writes the bytecode the runs read
        samples = [json.loads(subprocess.run(
            [sys.executable, "-c", code], cwd=where, env=env, check=True, capture_output=True,
            text=True).stdout) for _ in range(runs)]
        costs[name] = {"cpu": statistics.median(s[0] for s in samples),
                       "wall": statistics.median(s[1] for s in samples),
                       "modules": samples[0][2], "packages": samples[0][3]}
    return costs


def import_table(runs: int = 9) -> str:
    """This checkout beside `BEFORE` (exported from git into a temporary folder), in one run.
    Bytecode is cached as an installed package's is (a private cache folder, written by a
    first run), whatever PYTHONDONTWRITEBYTECODE says here."""
    with tempfile.TemporaryDirectory() as folder:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(folder) / "pycache")
        before = Path(folder) / "before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", BEFORE, "nbagent"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        measured = {"before": import_costs(before, runs, env), "now": import_costs(None, runs, env)}
    rows = ["| stage | tree | CPU | wall | modules loaded | third-party packages loaded |",
            "|---|---|---:|---:|---:|---|"]
    for name in STAGES:
        for tree, label in (("before", f"before (`{BEFORE}`)"), ("now", "now")):
            cost = measured[tree][name]
            rows.append(f"| {name} | {label} | {cost['cpu'] * 1000:.0f} ms | "
                        f"{cost['wall'] * 1000:.0f} ms | {cost['modules']} | "
                        f"{', '.join(cost['packages']) or 'none'} |")
    return "\n".join(rows) + (
        f"\n\nMedians of {runs} fresh interpreters per row, both trees in one run, bytecode "
        "cached; CPU is the process's own time over the statement. Target: `import nbagent` "
        "under 200 ms of CPU, loading nothing that talks to a network (httpx, ssl, asyncio), "
        "parses Markdown or builds a CLI (click, pygments) until it is used; "
        "`tests/test_seams.py` pins both stages' modules. The names load on first use "
        "(the root is a lazy door), so the second stage is what a first chat pays before its "
        "request: mostly pydantic (whose schemas are now built when a model is first used) "
        "and nbagent's own modules (regular expressions compiled, dataclasses built).")


def main() -> None:
    timings = check_seconds({size: build(size) for size in SIZES})
    rows = ["| messages | one check |", "|---:|---:|"]
    rows += [f"| {size:,} | {seconds * 1e6:.1f} µs |" for size, seconds in timings.items()]
    ratio = max(timings.values()) / min(timings.values())
    body = "\n".join(rows) + (
        f"\n\nSlowest / fastest: {ratio:.2f} (target ≤ 2: the check is O(1) in the history "
        f"length).\n\n{import_table()}")
    print(body)
    write_section("context_check", "Context-state check and import time", body)


if __name__ == "__main__":
    main()
