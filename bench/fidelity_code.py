"""The fidelity sessions' rounds that run code (bench/fidelity.py builds its sessions with it).

A scripted model calls the real `run_code` tool through the agent's real loop; nbagent's
plain runner (`nbagent.code.PlainRunner`) runs the code for real on a seeded DataFrame,
and the round is taken from the agent's history as the loop wrote it. What only the runs
produced — a value the code computed, a column name only its output shows, the error line
of a run that failed — are the session's code facts, checked after every compaction.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # should litellm ever load

import numpy as np
import pandas as pd

from nbagent import Agent, Settings
from nbagent.code import PlainRunner, use_code_runner
from nbagent.testing import ScriptedModel, Step, calls, reply

Message = dict[str, Any]
ROWS = 240
# the category column's values, as identifiers: the indicator columns made of them are
# names only a run's output shows
CATEGORY_VALUES = {
    "region": ["emea_north", "emea_central", "apac_south", "americas_west"],
    "plan": ["basic", "standard", "premium", "family"],
    "site": ["plant_a", "plant_b", "depot_north", "field_lab"],
    "country": ["de", "fr", "nl", "es"],
}
# big enough that the agent itself never compacts these few turns: the bench's own
# controller is what is measured
AGENT_WINDOW = 200_000


@dataclass(frozen=True)
class CodeFact:
    """Something only a run produced, visible while one line the model sees holds every
    piece of `needs`."""

    kind: str  # value, column, error
    needs: tuple[str, ...]


def visible(fact: CodeFact, text: str) -> bool:
    """Whether one line of `text` holds the fact (a name as a whole word)."""
    patterns = [re.compile(rf"(?<![\w]){re.escape(need)}(?![\w])") for need in fact.needs]
    return any(all(p.search(line) for p in patterns) for line in text.splitlines())


def frame(seed: int, columns: Sequence[str]) -> pd.DataFrame:
    """The session's `merged` frame: its columns, seeded values, the lookup's two columns."""
    rng = np.random.default_rng(seed)
    key, numeric, category, target = columns[0], columns[1:4], columns[4], columns[5]
    data: dict[str, Any] = {key: np.arange(1_000, 1_000 + ROWS)}
    data[numeric[0]] = rng.integers(1, 60, ROWS)
    data[numeric[1]] = rng.uniform(2, 250, ROWS).round(2)
    data[numeric[2]] = rng.normal(40, 12, ROWS).round(1)
    data[category] = rng.choice(CATEGORY_VALUES[category], ROWS)
    data[target] = rng.uniform(0, 900, ROWS).round(2)
    for extra in columns[6:]:
        data[extra] = rng.integers(0, 12, ROWS)
    data["segment_code"] = rng.choice(["S1", "S2", "S3"], ROWS)
    data["owner_team"] = rng.choice(["growth", "finance"], ROWS)
    return pd.DataFrame(data)


def printed(result: str) -> str:
    """The first line a run printed, from the tool result the model read."""
    found = re.search(r"^printed \([\d,]+ characters\):\n(.*)$", result, re.M)
    return found.group(1).strip() if found else ""


def header(result: str) -> list[str]:
    """The column names of a run's first displayed table (not the "..." of a wide one)."""
    found = re.search(r"^output 1:\n(.*)$", result, re.M)
    return [n for n in found.group(1).split() if n.isidentifier()] if found else []


def error_line(result: str) -> str:
    """The line naming a failed run's error (`KeyError: ...`), not its chained causes."""
    found = re.search(r"^\w*(?:Error|Exception): .*$", result, re.M)
    return found.group(0) if found else ""


class CodeRounds:
    """One session's agent: a scripted model, only the `run_code` tool (auto), the plain
    runner, and a namespace holding the session's `merged` frame."""

    def __init__(self, seed: int, columns: Sequence[str]) -> None:
        self.namespace: dict[str, Any] = {"pd": pd, "merged": frame(seed, columns)}
        self.model = ScriptedModel(name="bench/fidelity-code", context_window=AGENT_WINDOW)
        self.agent = Agent(model=self.model, namespace=self.namespace, archive=False,
                           builtin_tools=["run_code"],
                           settings=Settings(run_code="auto", notebook_context=False))

    def chat(self, ask: str, codes: Sequence[tuple[str, str]],
             answer: Callable[[list[str]], str]) -> list[Message]:
        """One turn: the model runs each of `codes` (code, its one-line explanation) in
        turn, then answers with `answer(the tool results it read)`. Returns the turn's
        messages as the loop stored them."""

        def respond(messages: list[Message]) -> Step:
            asked = max(i for i, m in enumerate(messages) if m["role"] == "user")
            results = [str(m["content"]) for m in messages[asked:] if m["role"] == "tool"]
            return reply(answer(results))

        steps: list[Any] = [calls(("run_code", {"code": code, "explanation": why}))
                            for code, why in codes]
        self.model.steps.extend([*steps, respond])
        start = len(self.agent.history.messages)
        # the plain runner whatever a test process installed before (a notebook's shows)
        previous = use_code_runner(PlainRunner())
        try:
            self.agent.chat(ask)
        finally:
            use_code_runner(previous)
        self.model.assert_consumed()
        return copy.deepcopy(self.agent.history.messages[start:])
