"""The archive is written one way: every record a session writes — its events, its own
session and exchange records, the messages a lazily opened file starts with, and the
snapshot a new file starts with after a loss — is made by its row of the kinds table, and
the readers ask the table, not a kind's name. No hook is assigned into another object."""

from __future__ import annotations

import ast
import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import nbagent
from nbagent.agent.archive import BY_KIND, RecordKind, ReplayState, replay
from nbagent.agent.tools import code_runs
from nbagent.code import PlainRunner
from nbagent.testing import Archive, ScriptedModel, ScriptedSummarizer, calls, reply
from tests.helpers import nine_sections

PACKAGE = Path(nbagent.__file__).parent
ROOMS = (PACKAGE, PACKAGE.parent / "widgets")  # the package, and the notebook room beside it
HOOKS = {"snapshot", "loader", "on_status", "echo", "validateLink"}
# Hooks still assigned, each because its owner offers no other way (an agent given an
# embedded model built before it listens to its status lines: `EmbeddedModel.listen`):
STILL_ASSIGNED = {
    # markdown-it-py's documented way to choose which links render (no constructor option)
    "widgets/_render.py: md.validateLink",
}


def assigned_into_others() -> set[str]:
    """Hooks, and private attributes, assigned into an object other than `self` (outside
    a classmethod, where a class builds its own instance)."""
    found = set()
    for room in ROOMS:
        for path in sorted(room.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            building = {id(node) for function in ast.walk(tree)
                        if isinstance(function, ast.FunctionDef) and any(
                            ast.unparse(d) == "classmethod" for d in function.decorator_list)
                        for node in ast.walk(function)}
            for node in ast.walk(tree):
                if not isinstance(node, ast.Assign) or id(node) in building:
                    continue
                for target in node.targets:
                    if not isinstance(target, ast.Attribute) or \
                            ast.unparse(target.value) in ("self", "cls"):
                        continue
                    private = target.attr.startswith("_") and not target.attr.endswith("__")
                    if target.attr in HOOKS or private:
                        found.add(f"{path.relative_to(PACKAGE.parent)}: {ast.unparse(target)}")
    return found


def test_no_module_assigns_a_hook_into_another_object() -> None:
    assert assigned_into_others() == STILL_ASSIGNED


def rows_that_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row's record function adds `by_row` to what it makes."""
    for kind, row in list(BY_KIND.items()):
        made = row.record
        if made is None:
            continue

        def signed(event: Any, made: Any = made) -> dict[str, Any]:
            return {**made(event), "by_row": True}

        monkeypatch.setitem(BY_KIND, kind, dataclasses.replace(row, record=signed))


def raw_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_record_a_session_writes_is_made_by_its_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows_that_sign(monkeypatch)

    def look(x: int) -> str:
        """Look at x."""
        return "seen " * 2_000

    delegated = [calls(("delegate", {"task": "look at 2"})), calls(("look", {"x": 2})),
                 reply("seen it")]  # a delegated task's transcript and record too
    agent = nbagent.Agent(
        model=ScriptedModel([*delegated, calls(("look", {"x": 1})), reply("done")],
                            default=reply("a long answer " * 60)),
        tools=[look], namespace={}, builtin_tools=["delegate"],
        settings=nbagent.Settings(max_context_tokens=8_192, data_dir=str(tmp_path)),
        summarize=ScriptedSummarizer(default=nine_sections()))
    agent.chat("look at 1", exchange="cell-0")
    for turn in range(1, 3):
        agent.chat(f"question {turn} " * 30, exchange=f"cell-{turn}")
    runs = code_runs(agent.events)
    runs.starting(1, "1 + 1")
    runs.record(PlainRunner().run("1 + 1", {}, "agent run 1"), 1)
    assert agent.compact().action == "compacted"
    path = agent.session.archive.path  # type: ignore[union-attr]
    first = raw_records(path)
    assert {r["kind"] for r in first} >= set(BY_KIND)  # every kind, the table's way
    path.unlink()  # lost under the running session: the next write starts a new file
    with pytest.warns(nbagent.NbagentWarning, match="was deleted"):
        agent.chat("after the loss", exchange="cell-1")
    again = raw_records(path)
    assert {"session", "message", "exchange", "output", "branch"} <= {
        r["kind"] for r in again}  # a new file starts with the session's snapshot
    unsigned = [r["kind"] for r in first + again if not r.get("by_row")]
    assert unsigned == []
    assert replay(path).messages == agent.history.messages
    agent.session.close()


def test_the_exchange_message_before_a_rewrite_is_found_by_the_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new kind that adds one message (a row with `holds`) is the message an exchange
    record without an index names, also on the replay's fast path."""

    def note(state: ReplayState, record: dict[str, Any], offset: int) -> None:
        state.messages.append(record["note"])

    monkeypatch.setitem(BY_KIND, "note", RecordKind("note", None, (("note", dict),), note,
                                                    early="history", holds="note"))
    system = {"role": "system", "content": "You are careful."}
    asked = {"role": "user", "content": "asked through a note"}
    with Archive("s1", tmp_path) as archive:
        archive.write("session", {"model": "m", "id": "s1", "sequence": 1})
        archive.write_message(system)
        archive.write("note", {"note": asked})
        archive.write("exchange", {"key": "cell-1"})  # no index: the message just before
        archive.write_rewrite([system, asked])
        archive.write_message({"role": "assistant", "content": "answered"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = replay(archive.path)
    assert got.exchanges == {"cell-1": asked}
