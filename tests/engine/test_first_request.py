"""The first request, the user's decisions and the latest ask on every path a window can
take: told, learned from an overflow (L4 first, then L2 or L3 on the learned window),
an overflow that states no numbers, and repeated overflows — through merges and many
compactions, with summarizers that write nothing useful."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import CompactionController, History, Settings, WindowInfo, resolve_window
from nbagent.testing import (
    Standalone,
    is_memory,
    is_plain_user,
    is_summary,
    kept_floor,
    parse_floor,
)

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import fidelity  # noqa: E402

Message = dict[str, Any]
WINDOW = 8_192
FIRST = ("We are building a churn model for the retention team, and these are the ground "
         "rules for the whole project. The raw data is in data/raw/{name}.csv and we use "
         "median imputation for the numeric gaps. Keep the customers from the pilot out of "
         "everything, they were hand-picked. Report every metric on the 2024 holdout only and "
         "never tune on it. Start with gradient boosting at default settings and explain "
         "each step briefly, with the code.")


class Server(Standalone):
    """A model whose server states no window: the default until an overflow told us."""

    learned: int | None = None

    def window(self) -> WindowInfo:
        return resolve_window("openai/own-server-model", settings=self.settings(),
                              learned=self.learned)


def first_request_of(messages: list[Message]) -> str | None:
    """The first user message in the order the history holds them: the first floor block's
    first user message, or the first plain user message when no block holds a floor."""
    for message in messages:
        if is_memory(message):
            users = kept_floor(str(message["content"])).user_messages
        elif is_summary(message):
            users = parse_floor(str(message["content"])).user_messages
        elif is_plain_user(message):
            return str(message["content"])
        else:
            continue
        if users:
            return users[0]
    return None


def run(path: str, summarize: Any, rounds: int) -> tuple[int, list[str]]:
    """The session through the controller on `path`; what went wrong after each rewrite."""
    session = fidelity.make_session(3, rounds)
    first = FIRST.format(name="sales")
    session.rounds[0].messages[0]["content"] = first
    told = path == "told"
    answers = Server(summarize, fixed_settings=Settings(max_context_tokens=WINDOW if told
                                                          else None))
    controller = CompactionController(answers)
    history = History([fidelity.SYSTEM])
    problems: list[str] = []
    rewrites = 0

    def check(decision: Any, latest: str, when: str) -> None:
        nonlocal rewrites
        if not decision.changed:
            return
        rewrites += 1
        text = fidelity.visible_text(history.messages)
        if first_request_of(history.messages) != first:
            problems.append(f"{when}: the first request is not first and whole")
        if latest not in text:
            problems.append(f"{when}: the latest ask is gone")
        lowered = text.lower()
        problems.extend(f"{when}: decision gone: {d}" for d in session.decisions
                        if d in asked and d not in lowered)

    asked: set[str] = set()
    for index, round_ in enumerate(session.rounds):
        ask, call, result, answer = round_.messages
        history.append(ask)
        asked.update(d for d in session.decisions if d in ask["content"].lower())
        check(controller.maybe_compact(history), ask["content"], f"round {index}")
        size = controller.count(history)
        if not told and size > WINDOW:  # the server refuses: its real body, then L4
            answers.learned = WINDOW if path == "learned" else answers.learned
            limits = (int(size * 1.05), WINDOW) if path == "learned" else (None, None)
            check(controller.handle_ptl_error(history, limits), ask["content"],
                  f"round {index} overflow")
        history.extend([call, result])
        check(controller.on_tool_result(history), ask["content"], f"round {index} mid-loop")
        history.append(answer)
    latest = session.rounds[-1].messages[0]["content"]
    check(controller.compact_now(history, focus=fidelity.FOCUS), latest, "compact_now")
    return rewrites, problems


SUMMARIZERS = {"garbage": fidelity.garbage, "bland": fidelity.bland,
               "raising": fidelity.raising, "none": None}


@pytest.mark.parametrize("summarizer", SUMMARIZERS, ids=list(SUMMARIZERS))
@pytest.mark.parametrize("path", ["told", "learned", "no-numbers"])
def test_the_first_request_decisions_and_latest_ask_survive_on_every_path(
        path: str, summarizer: str) -> None:
    rewrites, problems = run(path, SUMMARIZERS[summarizer], rounds=150)
    assert rewrites >= 20  # many compactions, merges among them
    assert problems == []
