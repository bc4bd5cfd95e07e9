"""A headless demo of the engine: a scripted data-science session on a small
window, printing the context state turn by turn; when it crosses the trigger the
CompactionController compacts it (snip, session memory), and at the end a
`/compact` with focus instructions compacts on request.

    python -m nbagent.demo [--window 8192] [--turns 16]

No model and no network: the conversation and the summarizer are scripted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from ._controller import CompactionController, Decision
from ._history import History
from ._settings import Settings
from ._thresholds import ContextState
from .compaction import SECTIONS

MODEL = "demo/scripted"

QUESTIONS = [
    "Load sales.csv and tell me its shape.",
    "Which columns have missing values?",
    "Describe the revenue column.",
    "Group revenue by region and show the totals.",
    "Which month had the highest revenue?",
    "Plot revenue over time; what trend do you see?",
    "Are there outliers in units_sold?",
    "Compare the north and south regions.",
    "Fit a linear trend to monthly revenue.",
    "What is the correlation between price and units_sold?",
    "Summarise what we found so far.",
    "Write the cleaned table to sales_clean.parquet.",
]


def _table(turn: int, rows: int = 40) -> str:
    """A DataFrame-like printout, the kind of tool output that fills windows."""
    header = "      region   month   revenue  units_sold   price"
    lines = [header] + [
        f"{i:4d}  {'north south east west'.split()[(i + turn) % 4]:>6}  2026-{(i % 12) + 1:02d}"
        f"  {1000 + 37.5 * ((i * 7 + turn) % 50):8.2f}  {(i * 13 + turn) % 400:10d}"
        f"  {9.99 + (i % 5):6.2f}"
        for i in range(rows)
    ]
    return "\n".join(lines)


def scripted_session(turns: int) -> Iterator[list[dict[str, Any]]]:
    """Yield the messages of one round at a time: question, tool call, result, answer."""
    for turn in range(turns):
        question = QUESTIONS[turn % len(QUESTIONS)]
        call_id = f"call-{turn}"
        arguments = json.dumps({"name": "sales", "rows": 40})
        yield [
            {"role": "user", "content": question},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "describe_variable", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": _table(turn)},
            {"role": "assistant", "content": f"Turn {turn}: here is what the table shows."},
        ]


def notes_summarizer(messages: list[dict[str, Any]]) -> str:
    """A scripted summarizer: one note per question it is shown; nine sections when asked."""
    prompt = str(messages[-1]["content"]).split("<conversation>")[-1]
    asks = [line for line in prompt.splitlines() if line.rstrip("?.").endswith(
        tuple(q.rstrip("?.")[-12:] for q in QUESTIONS))]
    notes = "\n".join(f"- looked into: {ask.strip()}" for ask in asks) or "- (nothing new)"
    if "nine sections" not in str(messages[-1]["content"]):
        return notes
    return "\n\n".join(f"## {n}. {title}\n{notes if n in (1, 5, 8) else 'None.'}"
                        for n, title in enumerate(SECTIONS, 1))


def describe(state: ContextState) -> str:
    t = state.thresholds
    armed = "armed" if state.auto_compact_armed else "off"
    return (f"{state.tokens:>6,} tokens · {state.percent_left:5.1f}% context left · "
            f"{state.level:<8} (auto-compact at {t.auto_compact:,}, {armed}; "
            f"window {t.window.raw_window:,} from {state.window_source})")


def describe_decision(decision: Decision) -> str:
    levels = " → ".join(decision.levels) or "nothing"
    return (f"        ↳ {decision.trigger} compaction {decision.action}: {levels}, "
            f"{decision.tokens_before:,} → {decision.tokens_after:,} tokens "
            f"({decision.summary_calls} summarizer calls)")


def run(window: int, turns: int, out: TextIO = sys.stdout) -> list[Decision]:
    controller = CompactionController(
        summarize=notes_summarizer, settings=Settings(max_context_tokens=window), model_info=None
    )
    history = History([{"role": "system", "content": "You are a careful data analyst."}])
    decisions: list[Decision] = []
    print(f"nbagent engine demo: window {window:,} tokens, {turns} scripted turns", file=out)
    for turn, messages in enumerate(scripted_session(turns)):
        decision = controller.maybe_compact(history, model=MODEL)  # before each request
        if decision.changed or decision.action == "failed":
            decisions.append(decision)
            print(describe_decision(decision), file=out)
        history.extend(messages)
        state = controller.state(history, MODEL)
        print(f"turn {turn:2d}  {messages[0]['content'][:44]:<44}  {describe(state)}", file=out)
    focus = "keep the exact column names"
    print(f"/compact {focus}", file=out)
    decision = controller.compact_now(history, model=MODEL, focus=focus)
    decisions.append(decision)
    print(describe_decision(decision), file=out)
    print(f"        {describe(controller.state(history, MODEL))}", file=out)
    return decisions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nbagent.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--window", type=int, default=8_192, help="context window in tokens")
    parser.add_argument("--turns", type=int, default=16, help="scripted user turns")
    args = parser.parse_args(argv)
    if args.window < 256 or args.turns < 1:
        parser.error("--window must be at least 256 and --turns at least 1")
    run(args.window, args.turns)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
