"""One context-state check (tracker count + context state) must not grow with the history.

    python bench/context_check.py   # prints a table, updates docs/performance.md

Also times `import nbagent` in a fresh interpreter (target: under 0.3 s).
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time

from report import write_section

from nbagent import History, Settings, Usage, context_state, thresholds
from nbagent.engine import TokenTracker

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


def import_seconds() -> float:
    code = "import time; t = time.perf_counter(); import nbagent; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(5)
    ]
    return statistics.median(runs)


def main() -> None:
    timings = check_seconds({size: build(size) for size in SIZES})
    rows = ["| messages | one check |", "|---:|---:|"]
    rows += [f"| {size:,} | {seconds * 1e6:.1f} µs |" for size, seconds in timings.items()]
    ratio = max(timings.values()) / min(timings.values())
    imported = import_seconds()
    body = "\n".join(rows) + (
        f"\n\nSlowest / fastest: {ratio:.2f} (target ≤ 2: the check is O(1) in the history "
        f"length).\n\n`import nbagent` in a fresh interpreter: {imported * 1000:.0f} ms "
        "(median of 5; target under 300 ms; litellm, IPython and ipywidgets are not imported)."
    )
    print(body)
    write_section("context_check", "Context-state check and import time", body)


if __name__ == "__main__":
    main()
