"""Code the model proposes for a new notebook cell (`nbagent.agent.tools._cells`): announced
as `CellProposed` and never run; everything proposed since the user's latest message is one
cell (a notebook note mid-turn is not a new question); without a session or without code the
model is told so; through the chat loop, one cell per question."""

from __future__ import annotations

from typing import Any

from nbagent.agent.tools import OutputStore, notebook_tools
from tests.agent.tools.helpers import tools


def test_propose_cell_emits_the_cell_and_runs_nothing() -> None:
    from nbagent.events import CellProposed, EventStream, MessageAdded

    events = EventStream()
    seen: list[object] = []
    events.subscribe(seen.append)
    namespace: dict[str, Any] = {}
    propose = {t.name: t for t in notebook_tools(namespace, OutputStore(),
                                                 events=events)}["propose_cell"]
    events.emit(MessageAdded({"role": "user", "content": "plot it"}))
    first = propose(code="ran = True\nprint('hello')", explanation="Say hello.")
    assert first.startswith("Proposed a new code cell (3 lines) below the chat cell, for the "
                            "user to review and run; nothing was run.")
    assert namespace == {}  # never run
    from nbagent.engine.compaction import notebook_note

    note = notebook_note([], "df: DataFrame shape (3, 2)")
    assert note is not None
    events.emit(MessageAdded(note))
    second = propose(code="df.plot()")  # a notebook note mid-turn is not a new question
    assert "only one new cell can be placed below a chat cell, so it now holds 2 proposals" \
        in second
    cells = [e.code for e in seen if isinstance(e, CellProposed)]
    assert cells == ["# Say hello.\nran = True\nprint('hello')",
                     "# Say hello.\nran = True\nprint('hello')\n\ndf.plot()"]
    events.emit(MessageAdded({"role": "user", "content": "next question"}))  # a new chat cell
    assert propose(code="x = 1").startswith("Proposed a new code cell (1 lines)")
    assert [e.code for e in seen if isinstance(e, CellProposed)][-1] == "x = 1"


def test_propose_cell_without_a_session_or_code_says_so() -> None:
    propose = tools({})["propose_cell"]
    assert propose(code="x = 1").startswith("No notebook cell can be added here")
    assert propose(code="  \n") == "Nothing proposed: the code is empty."


def test_the_model_proposes_cells_through_the_chat_loop() -> None:
    from nbagent import Agent
    from nbagent.events import CellProposed
    from nbagent.testing import ScriptedModel, calls, reply

    model = ScriptedModel([
        calls(("propose_cell", {"code": "a = 1"}), ("propose_cell", {"code": "b = 2"})),
        reply("Two steps, one cell."),
        calls(("propose_cell", {"code": "c = 3"})), reply("Another cell."),
    ])
    namespace: dict[str, Any] = {}
    agent = Agent(model=model, namespace=namespace, archive=False, builtin_tools=False)
    for made in notebook_tools(namespace, agent.session.store, events=agent.events):
        agent.add_tool(made)
    cells: list[str] = []
    agent.events.subscribe(lambda e: cells.append(e.code) if isinstance(e, CellProposed) else None)
    agent.chat("set up a and b")
    agent.chat("and c")
    assert cells == ["a = 1", "a = 1\n\nb = 2", "c = 3"] and namespace == {}
