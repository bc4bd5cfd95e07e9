"""The main job, headless: a multi-turn data-science chat with the embedded local
model (SmolLM2-135M on llama.cpp, a 2,048-token window) that fills the window,
compacts automatically and on request (`/compact` with focus), and recovers from
a real "prompt too long" from the server — printing the conversation, every
compaction decision and the context left as it goes.

    python -m nbagent.demo [--window 2048] [--offline]

`--offline` runs the script with a rule-following stand-in instead of the model (no
server, instant; every question, where the model is asked the first `TURNS` before
`/compact`, and no misconfigured window). No API key and no network either way.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ..engine._decision import Decision
from ..engine._estimator import estimate_tokens
from ..engine._events import Compacted, ToolFinished, ToolStarted
from ..engine._exceptions import NbagentError
from ..engine._figures import count, percent, tokens, tool_call
from ..engine._thresholds import ContextState
from ._agent import Agent
from .models._resolve import EmbeddedModel
from .tools._tool import tool

SYSTEM = "You are a data analyst. Use the tools, then answer in one or two sentences."
SALES: dict[str, list[Any]] = {
    "region": ["north", "south", "east", "west", "north", "south", "east", "west"],
    "month": ["2026-01", "2026-01", "2026-02", "2026-02", "2026-03", "2026-03", "2026-04",
              "2026-04"],
    "revenue": [1200.5, 980.0, 1430.25, 1010.0, 1510.0, 1105.75, 1620.5, 990.25],
    "units_sold": [120, 95, 143, 88, 151, 110, 160, 97],
}
QUESTIONS = [
    ("What columns does the sales table have?", "show_rows"),
    ("What is the average revenue?", "column_stats"),
    ("Which region sold the most units?", "show_rows"),
    ("How does revenue change from January to April?", "show_rows"),
    ("What are the statistics of units_sold?", "column_stats"),
    ("Is the north region growing?", "show_rows"),
    ("Which month had the lowest revenue?", "show_rows"),
    ("Summarise the revenue column.", "column_stats"),
]
FOCUS = "keep the exact column names"
NOTES = ("Here are my notes from last quarter, please keep them in mind: ",
         "north grew steadily, south was flat, east peaked in April. ")  # lead, repeated line
# On the embedded model (a 2-core laptop reads a prompt token in ~8 ms of CPU and makes a
# reply token in ~20 plus sampling): replies bounded (a summary too: `summary_tokens`), the
# first TURNS questions before /compact (enough for a summary worth its call), then the
# window filled with pasted notes rather than generated words.
ANSWER_TOKENS = 128
TURNS = 4


def sales_tools() -> list[Any]:
    columns = list(SALES)

    @tool
    def show_rows(start: int = 0, count: int = 8) -> str:
        """Show rows of the sales table.

        Args:
            start: the first row.
            count: how many rows.
        """
        rows = range(max(0, start), min(len(SALES["region"]), max(0, start) + max(1, count)))
        lines = ["  ".join(f"{c:>10}" for c in columns)]
        lines += ["  ".join(f"{SALES[c][i]!s:>10}" for c in columns) for i in rows]
        return "\n".join(lines)

    @tool
    def column_stats(column: str) -> str:
        """Statistics of one column of the sales table.

        Args:
            column: the column's name.
        """
        if column not in SALES:
            return f"No column {column!r}; the columns are {', '.join(columns)}."
        values = SALES[column]
        if not all(isinstance(v, (int, float)) for v in values):
            distinct = sorted(set(map(str, values)))
            return f"{column}: {len(distinct)} distinct values: {', '.join(distinct)}"
        numbers = [float(v) for v in values]
        mean = sum(numbers) / len(numbers)
        return (f"{column}: count {len(numbers)}, mean {mean:.2f}, min {min(numbers):.2f}, "
                f"max {max(numbers):.2f}, sum {sum(numbers):.2f}")

    return [show_rows, column_stats]


@contextmanager
def progress(out: TextIO, label: str = "working") -> Iterator[None]:
    """A spinner with elapsed seconds on a terminal; a single line elsewhere."""
    done = threading.Event()
    started = time.monotonic()
    if not out.isatty():
        print(f"  … {label}", file=out, flush=True)
        yield
        return

    def spin() -> None:
        marks = "|/-\\"
        tick = 0
        while not done.wait(0.2):
            out.write(f"\r  {marks[tick % 4]} {label} {time.monotonic() - started:4.1f}s")
            out.flush()
            tick += 1
        out.write("\r" + " " * 40 + "\r")

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def describe(state: ContextState) -> str:
    """The context as a notebook's meter line says it (`MeterReading.text` in the notebook
    room; tests/notebook/test_decision_words.py holds them alike): the percentage and what
    it is of, the level in the meter's words (`ContextState.level_words`), the tokens, the
    trigger, the effective window and the window with where it came from."""
    limits = state.thresholds
    of = "until auto-compact" if state.auto_compact_armed else "in the effective window"
    status = state.level_words + (f" · {state.compaction_note}" if not state.auto_compact_armed
                                  and state.compaction_note else "")
    base = (f"auto-compact at {count(state.base)}" if state.auto_compact_armed
            else f"effective window {count(state.base)}")
    effective = (f" · effective window {count(limits.effective_window)}"
                 if state.auto_compact_armed else "")
    return (f"[{percent(state.percent_left)} context left {of} ({status}) · "
            f"{tokens(state.tokens)} · {base}{effective} · window "
            f"{count(limits.context_window)} ({state.window_source})]")


def describe_decision(decision: Decision) -> str:
    """A decision in the words the notebook uses (`Decision.words`), saying when it ran
    ("compacted on request (…"), with what left the view and, for a failure, the
    failures in a row."""
    text = f"  ↳ {decision.words(trigger=True)}"
    left = decision.left_view_words()
    if left:
        text += f"\n    {left}"
    if decision.action == "failed":
        text += f"\n    (failures in a row: {decision.failures})"
    return text


def overflowing(agent: Agent, window: int, learned: bool) -> str:
    """Notes for the next question: enough that the request no longer fits the server's
    `window` (before its limit is learned), or crosses the auto-compact trigger (after),
    but never more than half the window (the question alone must fit, so a recovery can
    keep it)."""
    state = agent.context_state()
    goal = state.thresholds.auto_compact * 1.05 if learned else window * 1.06
    wanted = min(window // 2, max(0, int(goal) - state.tokens))
    lead, line = NOTES
    return lead + line * max(1, -(-wanted // estimate_tokens(line)))


def make_agent(window: int, offline: bool) -> Agent:
    if offline:
        from ._settings import Settings
        from .models._scripted import offline_analyst

        # the two built-ins the stand-in calls: every schema takes room in a small window
        return Agent(model=offline_analyst(), system=SYSTEM, tools=sales_tools(),
                     builtin_tools=("list_variables", "describe_variable"),
                     namespace={"sales": SALES}, settings=Settings(max_context_tokens=window))
    agent = Agent(model="local", system=SYSTEM, tools=sales_tools(), builtin_tools=False,
                  namespace={}, settings={"local_n_ctx": window,
                                          "local_max_tokens": ANSWER_TOKENS})
    if isinstance(agent.model, EmbeddedModel):
        agent.model.started()  # the embedded model starts on first use: start it now
    return agent


def run(window: int = 2048, offline: bool = False, out: TextIO = sys.stdout) -> list[Decision]:
    """Run the scripted session; return every compaction decision made."""
    print(f"nbagent demo: {'a stand-in model' if offline else 'SmolLM2-135M on llama.cpp'}, "
          f"window {tokens(window)}", file=out, flush=True)
    with progress(out, "starting the embedded model"):
        agent = make_agent(window, offline)
    decisions: list[Decision] = []

    def show(event: object) -> None:
        if isinstance(event, ToolStarted):
            print(f"  → {tool_call(event.name, event.arguments)}", file=out, flush=True)
        elif isinstance(event, ToolFinished):
            print(f"    {event.chars:,} chars back{'' if event.ok else ' (an error)'}", file=out)
        elif isinstance(event, Compacted) and event.decision.action in ("compacted", "failed"):
            decisions.append(event.decision)
            print(describe_decision(event.decision), file=out, flush=True)

    agent.events.subscribe(show)

    def ask(question: str, tool_choice: str | None = None) -> None:
        print(f"\nyou: {question[:100]}{'…' if len(question) > 100 else ''}", file=out)
        with progress(out):
            try:
                result = agent.chat(question, tool_choice=tool_choice)
            except NbagentError as error:
                print(f"agent: (stopped) {error}", file=out)
                return
        print(f"agent: {result.text.strip()}", file=out)  # whole, as a notebook shows it
        if result.truncated:  # the notebook's "⋯" line
            print(f"  ⋯ (cut at the reply cap: {tokens(ANSWER_TOKENS)})", file=out)
        print(describe(agent.context_state()), file=out, flush=True)

    for question, tool_name in (QUESTIONS if offline else QUESTIONS[:TURNS]):
        ask(question, None if offline else tool_name)
    print(f"\nyou: /compact {FOCUS}", file=out)
    with progress(out, "compacting"):
        decision = agent.compact(FOCUS)
    if decision not in decisions:
        decisions.append(decision)
        print(describe_decision(decision), file=out)
    print(describe(agent.context_state()), file=out, flush=True)

    if not offline:  # a real overflow: the agent is told a bigger window than the server has
        print(f"\n(simulating a misconfigured window: NBAGENT_MAX_CONTEXT_TOKENS={4 * window} on "
              f"a server whose window is {tokens(window)}, so nbagent will not compact in "
              "time)",
              file=out)
        agent.configure(window=4 * window)
        shown = {"overflow", "auto"}  # the server's refusal recovered, then the learned window
        try:
            for question, _ in QUESTIONS[:4]:
                compacted = {d.trigger for d in decisions if d.action == "compacted"}
                if shown <= compacted:
                    break  # both shown: a further question only compacts again
                notes = overflowing(agent, window, learned="overflow" in compacted)
                ask(f"{notes} {question}", "none")  # answer, no tool
        finally:
            agent.configure(window=None)
    counts = {trigger: sum(d.trigger == trigger and d.action == "compacted" for d in decisions)
              for trigger in ("auto", "midloop", "manual", "overflow")}
    print(f"\ncompactions: {counts}; failures now {agent.controller.failure_count()}", file=out)
    return decisions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nbagent.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=int, default=2048, help="context window in tokens")
    parser.add_argument("--offline", action="store_true",
                        help="use a rule-following stand-in instead of the local model")
    args = parser.parse_args(argv)
    if args.window < 1024:
        parser.error("--window must be at least 1024 (the model needs room to answer)")
    try:
        run(args.window, args.offline)
    except NbagentError as error:
        print(f"nbagent: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
