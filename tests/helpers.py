"""Builders for test histories and summaries."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

from nbagent import CompactionController, Settings, estimate_message_tokens
from nbagent.compaction import SECTIONS
from nbagent.events import Status

SYSTEM = {"role": "system", "content": "You are a careful data analyst."}


def tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """The estimated size of `messages`, counted as the levels count them."""
    return sum(estimate_message_tokens(m) for m in messages)


def nine_sections(note: str = "notes") -> str:
    """A valid full summary: every `SECTIONS` title (nine today, hence the name; it follows
    the table) under its numbered heading, each saying `note` and its title."""
    return "\n\n".join(
        f"## {n}. {title}\n{note} for {title.lower()}" for n, title in enumerate(SECTIONS, 1)
    )


def tool_round(
    t: int, result: str | None = None, question: str | None = None
) -> list[dict[str, Any]]:
    """A user question, one tool call with its result, and an answer."""
    call_id = f"call-{t}"
    return [
        {"role": "user", "content": question or f"question {t}: describe sales_df column col_{t}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "describe", "arguments": json.dumps({"name": "sales_df"})},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": result
            if result is not None
            else f"col_{t} stats: " + "1.25 3.5 7.75 " * 120,
        },
        {"role": "assistant", "content": f"Column col_{t} has mean {t}.5 and no missing values."},
    ]


def session(
    rounds: int, first: str = "Load data/sales.csv into sales_df and explore it."
) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [SYSTEM]
    for t in range(rounds):
        messages += tool_round(t, question=first if t == 0 else None)
    return messages


def make_agent(model: Any, window: int = 200_000, **kwargs: Any) -> tuple[Any, list[float]]:
    """An agent on a scripted model with a fixed window, no archive, and retries that
    record their waits instead of sleeping."""
    from nbagent import Agent, RetryPolicy, Settings
    from nbagent.testing import ScriptedSummarizer

    sleeps: list[float] = []
    settings = kwargs.pop("settings", None) or Settings(max_context_tokens=window)
    agent = Agent(
        model=model,
        settings=settings,
        retry=RetryPolicy(sleep=sleeps.append),
        namespace=kwargs.pop("namespace", {}),
        summarize=kwargs.pop("summarize", ScriptedSummarizer(default="- notes")),
        archive=kwargs.pop("archive", False),
        **kwargs,
    )
    return agent, sleeps


def tool_results(agent: Any) -> list[str]:
    return [m["content"] for m in agent.history if m["role"] == "tool"]


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def controller(summarize: Any = None, **settings: Any) -> tuple[CompactionController, list[Any]]:
    """A controller on an 8,192-token window (`settings` changed), and every event it sends."""
    ctl = CompactionController(summarize=summarize, window="local/test",
                               settings=Settings(max_context_tokens=8_192, **settings))
    seen: list[Any] = []
    ctl.events.subscribe(seen.append)
    return ctl, seen


def statuses(seen: list[Any]) -> list[str]:
    """The status lines among `seen` events, in order."""
    return [e.text for e in seen if isinstance(e, Status)]


COLUMNS = ["region", "units", "unit_price", "revenue", "churned", "tenure_months", "store"]


def paste(rng: random.Random, size: int) -> str:
    """What a data scientist pastes: a DataFrame's head, a describe() table, a traceback."""
    kind = rng.choice(["frame", "describe", "traceback"])
    columns = rng.sample(COLUMNS, 4)
    lines = ["Traceback (most recent call last):", '  File "analysis.py", line 42, in <module>',
             "    df = clean(raw)", "KeyError: 'revenue_eur'"] if kind == "traceback" else []
    lines.append("      " + "  ".join(f"{c:>13}" for c in columns))
    while sum(len(line) + 1 for line in lines) < size:
        label = (rng.choice(["count", "mean", "std", "min", "50%", "max"]) if kind == "describe"
                 else str(len(lines)))
        lines.append(f"{label:<6}" + "  ".join(
            f"{rng.uniform(0, 9_999):>13.2f}" if i else f"{rng.choice(['north', 'south']):>13}"
            for i, _ in enumerate(columns)))
    return "\n".join(lines)


def pasted_asks(turns: int, seed: int = 7) -> list[str]:
    """A data-science session's asks, each with a 1–3 KB paste (seeded)."""
    rng = random.Random(seed)
    return [f"Turn {t}: here is what I got, what stands out?\n"
            f"{paste(rng, rng.randint(1_000, 3_000))}" for t in range(turns)]
