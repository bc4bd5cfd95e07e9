"""The README's test command, timed: `python -m pytest` as `.ci/run` runs it once the
install is done, and the contributors' fast loop, each with the machine's load beside it
(a shared machine's other work slows a run; the figure is only read with its load).

    python bench/suite.py            # both runs; updates docs/performance.md
    python bench/suite.py --fast     # the fast loop only (prints, writes nothing)

Each run's output is kept in build/suite/.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import report

ROOT = Path(__file__).parents[1]
LOGS = ROOT / "build" / "suite"
README_COMMAND = ["python", "-m", "pytest"]
FAST_LOOP = ["python", "-m", "pytest", "-m", "not real and not slow"]
COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|deselected|xfailed|xpassed)")


@dataclass
class Run:
    command: list[str]
    seconds: float
    counts: dict[str, int]
    load_before: float
    load_during: float  # the mean of the 1-minute load average, sampled every 5 s
    returncode: int

    @property
    def ran(self) -> int:
        return sum(n for kind, n in self.counts.items() if kind != "deselected")

    @property
    def words(self) -> str:
        minutes, seconds = divmod(round(self.seconds), 60)
        return f"{minutes} min {seconds:02d} s"


def timed(command: list[str]) -> Run:
    """Run `command` (python as this interpreter) in the repository; its wall time, its
    closing counts and the load around it."""
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(5):
            samples.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, daemon=True)
    before = os.getloadavg()[0]
    sampler.start()
    started = time.monotonic()
    out = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True,
                         text=True)
    seconds = time.monotonic() - started
    LOGS.mkdir(parents=True, exist_ok=True)  # what it printed, for a run that failed
    (LOGS / f"{'-'.join(command[3:]) or 'all'}.log".replace(" ", "_")).write_text(
        out.stdout + out.stderr, encoding="utf-8")
    done.set()
    sampler.join()
    closing = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
              for n, kind in COUNTS.findall(closing)}
    return Run(command, seconds, counts, before, sum(samples) / len(samples) if samples else
               before, out.returncode)


def row(name: str, run: Run) -> str:
    counts = ", ".join(f"{n:,} {kind}" for kind, n in run.counts.items())
    return (f"| {name} | `{shlex.join(run.command)}` | {counts} | {run.words} | "
            f"{run.load_before:.1f} | {run.load_during:.1f} |")


def main() -> int:
    fast_only = "--fast" in sys.argv[1:]
    runs = [("the fast loop", timed(FAST_LOOP))]
    if not fast_only:
        runs.insert(0, ("the README's", timed(README_COMMAND)))
    for name, run in runs:
        print(row(name, run))
    if fast_only:
        return runs[0][1].returncode
    write(runs)
    return max(run.returncode for _, run in runs)


def write(runs: list[tuple[str, Run]]) -> None:
    """docs/performance.md's section: a run with failures is written too, its failures in
    the table (a figure is read with its counts and its load)."""
    readme = runs[0][1]
    report.write_section("suite", "The test suite", f"""
`python bench/suite.py` runs the README's test command (`.ci/run` runs it after the install
in a fresh virtual environment) and the contributors' fast loop, and times each
on {os.cpu_count()} cores beside the machine's load (the 1-minute load average when it
started and its mean while it ran; a quiet machine shows well under the number of cores).
The README's figure: **{readme.words}** for {readme.ran:,} tests.

| run | command | tests | wall time | load before | load during |
|---|---|---|---:|---:|---:|
{chr(10).join(row(name, run) for name, run in runs)}

The tests run on xdist workers, one per core and four at least on 2 cores; the browser
tests (one JupyterLab, one Notebook 7, one Chromium) run on one worker, the llama.cpp tests
on the run's shared server on another and those that start a server of their own on a third
(one group with the second where a server runs more than one thread), beside the rest
(tests/conftest.py says how a test joins a group).
""")


if __name__ == "__main__":
    sys.exit(main())
