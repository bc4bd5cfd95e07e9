"""What the embedded model answers a newcomer, on the real embedded server (SmolLM2-135M on
llama-cpp-python's server, through the agent as a notebook drives it): ten different
questions about one DataFrame, each in a fresh session, then one asking for `run_code` by
name. Counted: how many answers differ, how many name a real column of the frame, how
many name a column-like thing it does not have, the tool calls made, the seconds.

Two settings in one run, on the same server: "now" (the defaults: decoding in
`_local_terms.DECODING`, a seed from the prompt, built-in tools shown only when a turn
names one, the notebook context before the question) and "before" (greedy decoding with
a fixed seed, the built-ins offered every turn but five, the context after the question:
how the embedded model was sampled and prompted until issue 40), rebuilt here by
overriding those three choices.

    python bench/embedded_answers.py           # prints, updates docs/models.md
    python bench/embedded_answers.py --no-write --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from report import write_section  # noqa: E402

from nbagent import Agent  # noqa: E402
from nbagent.agent import _loop  # noqa: E402
from nbagent.agent.models._local_terms import DECODING  # noqa: E402

MODELS_MD = ROOT / "docs" / "models.md"
FRAME_NAME = "visits"
QUESTIONS = (
    "Which columns does visits have?",
    "What is the average visitor rating?",
    "Which column tells me how long people stay?",
    "How would I find the month with the most visits?",
    "Are there missing values in visits?",
    "Which country has the best rating?",
    "What does the visit_count column count?",
    "How can I plot visits by month?",
    "Which columns of visits are numeric?",
    "Suggest a first analysis of visits.",
)
BY_NAME = "Use run_code to compute the mean visitor_rating of visits."
# (`visit_count`, not `visits`: an answer naming the frame does not count as a column)
BEFORE_SKIPS = frozenset({"run_code", "python", "read_file", "read_output", "recall"})
BEFORE_DECODING = {"temperature": 0.0, "seed": 7}
_IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")  # snake_case


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(40)
    return pd.DataFrame({
        "country": rng.choice(["FR", "PT", "CA", "AT"], 60),
        "month": rng.integers(1, 13, 60),
        "visit_count": rng.integers(20, 400, 60),
        "visitor_rating": rng.normal(4.0, 0.5, 60).round(1),
        "avg_stay_days": rng.gamma(2.0, 1.5, 60).round(1),
    })


def columns_named(text: str, columns: list[str]) -> list[str]:
    return [c for c in columns if re.search(rf"(?<![\w]){re.escape(c)}(?![\w])", text)]


def invented(text: str, real: set[str]) -> list[str]:
    """Look-alike columns the answer names that the frame does not have: snake_case names
    sharing a word with a real one ("visit_rating" for `visitor_rating`, "country_id")."""
    parts = {part for name in real for part in name.split("_") if len(part) > 2}
    return sorted({n for n in _IDENTIFIER.findall(text) if n not in real
                   and parts & set(n.split("_"))})


@contextmanager
def before(agent: Agent, served: Any) -> Iterator[None]:
    """The settings before issue 40, on the same server: greedy with a fixed seed, every
    built-in but five, the notebook context after the question."""
    options, skips, placed = dict(served.options), served.skips, _loop.with_context
    offered = served.offered

    def after(messages: list[dict[str, Any]], context: str | None) -> list[dict[str, Any]]:
        sent = placed(messages, context)
        if not context:
            return sent
        for index in range(len(sent) - 1, -1, -1):
            content = sent[index].get("content")
            prefix = f"[{context}]\n\n"
            if isinstance(content, str) and content.startswith(prefix):
                sent = list(sent)
                sent[index] = {**sent[index],
                               "content": f"{content[len(prefix):]}\n\n[{context}]"}
                break
        return sent

    served.options = {**{k: v for k, v in options.items() if k not in DECODING},
                      **BEFORE_DECODING}
    served.skips = BEFORE_SKIPS
    # a skipped tool was never shown, even when the message named it
    served.offered = lambda tools, messages=(), tool_choice=None: [
        t for t in tools if t.get("function", t).get("name") not in BEFORE_SKIPS]
    _loop.with_context = after  # type: ignore[assignment]
    try:
        yield
    finally:
        served.options, served.skips, served.offered = options, skips, offered
        _loop.with_context = placed  # type: ignore[assignment]


def ask(agent: Agent, question: str) -> dict[str, Any]:
    agent.new_session(archive=False)
    started = time.monotonic()
    result = agent.chat(question)
    calls = [call["function"]["name"] for m in agent.history.messages
             for call in m.get("tool_calls") or ()]
    return {"question": question, "answer": result.text, "calls": calls,
            "seconds": time.monotonic() - started}


def measure(setting: str, agent: Agent, columns: list[str], say: Any) -> dict[str, Any]:
    real = {*columns, FRAME_NAME}
    answers = []
    for question in (*QUESTIONS, BY_NAME):
        answered = ask(agent, question)
        answered["columns"] = columns_named(answered["answer"], columns)
        answered["invented"] = invented(answered["answer"], real)
        answers.append(answered)
        say(f"  {setting}: {question!r} → {answered['calls']} "
            f"{answered['answer'][:100]!r}", flush=True)
    ten = answers[:len(QUESTIONS)]
    return {
        "answers": answers,
        "distinct": len({a["answer"].strip() for a in ten}),
        "naming_a_column": sum(bool(a["columns"]) for a in ten),
        "columns_named": statistics.mean(len(a["columns"]) for a in ten),
        "with_invented": sum(bool(a["invented"]) for a in ten),
        "tool_calls": sum(len(a["calls"]) for a in ten),
        "empty": sum(not a["answer"].strip() for a in ten),
        "run_code_when_asked": "run_code" in answers[-1]["calls"],
        "median_s": statistics.median(a["seconds"] for a in ten),
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    now, old = results["now"], results["before"]
    n = len(QUESTIONS)
    rows = [
        ("different answers", f"{old['distinct']} of {n}", f"{now['distinct']} of {n}"),
        ("answers naming a real column", f"{old['naming_a_column']} of {n}",
         f"{now['naming_a_column']} of {n}"),
        ("real columns named per answer (mean)", f"{old['columns_named']:.1f}",
         f"{now['columns_named']:.1f}"),
        ("answers naming a look-alike column it does not have", f"{old['with_invented']} of {n}",
         f"{now['with_invented']} of {n}"),
        ("empty answers", f"{old['empty']}", f"{now['empty']}"),
        ("tool calls made", f"{old['tool_calls']}", f"{now['tool_calls']}"),
        ("`run_code` called when asked for by name", "yes" if old["run_code_when_asked"]
         else "no", "yes" if now["run_code_when_asked"] else "no"),
        ("median seconds per answer (shared machine)", f"{old['median_s']:.0f}",
         f"{now['median_s']:.0f}"),
    ]
    lines = ["| ten questions about one DataFrame | before | now |", "|---|---:|---:|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    sample = "; ".join(f"{a['question']!r} → {a['answer'][:90].strip()!r}"
                       for a in now["answers"][:3])
    decoding = ", ".join(f"{k} {v}" for k, v in DECODING.items())
    return "\n".join(lines) + (
        f"\n\nThe frame: `{FRAME_NAME}`, 60 rows, columns "
        f"{', '.join(f'`{c}`' for c in frame().columns)}; each question in a fresh session "
        f"(the notebook context lists the frame), then \"{BY_NAME}\". Now: {decoding}, a "
        f"seed from the prompt; before: temperature 0 with seed 7, the built-ins offered "
        f"every turn but five, the notebook context after the question. A column counts "
        f"when the answer names it exactly; a look-alike is a snake_case name sharing a word "
        f"with a real column (`visit_rating`, `country_id`). First answers now: {sample}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = frame()
    columns = list(data.columns)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["NBAGENT_DATA_DIR"] = scratch
        agent = Agent(namespace={FRAME_NAME: data}, archive=False,
                      settings={"local_n_ctx": 4096, "local_max_tokens": 160,
                                "run_code": "auto"})
        served = agent.model.started()  # type: ignore[attr-defined]
        results = {"now": measure("now", agent, columns, print)}
        with before(agent, served):
            results["before"] = measure("before", agent, columns, print)
        served.server.release()
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    body = table(results)
    print(body)
    if not args.no_write:
        write_section("embedded_answers", "What the embedded model answers", body,
                      doc=MODELS_MD)


if __name__ == "__main__":
    sys.exit(main())
