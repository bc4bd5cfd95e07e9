"""Code into cells: a proposed cell (the `propose_cell` tool's `CellProposed`, or the code of
a `%%chat --cell` reply) becomes the kernel's next input — a new cell below the chat cell,
never run — and the chat says so in one line."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import CellProposals, ChatDisplay

import nbagent
from nbagent import ChatResult, tool
from nbagent.events import CellProposed
from nbagent.testing import ScriptedModel, calls, reply
from tests.notebook.helpers import plain, session

PROPOSED = "proposed a new cell below (not run: read it, then run it yourself)"


class Shell(InteractiveShell):  # type: ignore[misc]
    """Records the next-input requests as ipykernel turns them into payloads."""

    def set_next_input(self, text: str, replace: bool = False) -> None:
        self.next_inputs.append((text, replace))


def test_a_proposed_cell_becomes_the_next_input_and_is_not_run(ip: InteractiveShell) -> None:
    @tool
    def propose(code: str) -> str:
        """Stands in for the built-in propose_cell: it announces the whole cell."""
        nbagent.current().events.emit(CellProposed(code))
        return "proposed"

    ip.user_ns.pop("ran", None)
    cell = "ran = True\nprint(sales.describe())"
    session(ScriptedModel([calls(("propose", {"code": cell})), reply("See the new cell.")]),
            tools=[propose], builtin_tools=False)
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "show me the code")
    assert ip.rl_next_input == cell
    assert "ran" not in ip.user_ns  # never run for the user
    assert plain(captured)[-1] == PROPOSED


def test_the_latest_proposal_of_a_turn_is_the_cell() -> None:
    shell = Shell()
    shell.next_inputs = []
    proposals = CellProposals(shell)
    proposals(CellProposed("a = 1"))
    proposals(CellProposed("a = 1\n\nb = 2"))
    proposals(CellProposed("   "))  # nothing to propose
    assert shell.next_inputs == [("a = 1", False), ("a = 1\n\nb = 2", False)]


def test_the_builtin_propose_cell_tool_reaches_the_cell(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel([calls(("propose_cell", {"code": "df.head()"})),
                                   reply("done")]))
    if "propose_cell" not in str(agent.tool_schemas()):
        pytest.skip("the built-in propose_cell tool is not offered by this library version")
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "give me a cell")
    answer = str(agent.history[-2].get("content"))
    if "no session" in answer:
        pytest.skip("propose_cell gets no event stream in its tool context yet: " + answer)
    assert ip.rl_next_input == "df.head()"
    assert PROPOSED in plain(captured)


def test_chat_cell_asks_for_code_and_the_last_block_becomes_the_cell(
        ip: InteractiveShell) -> None:
    answer = ("First:\n```python\nold = 1\n```\nBetter:\n\n```python\n"
              "sales.groupby('region').revenue.sum()\n```\nRun it.")
    model = ScriptedModel([reply(answer)])
    session(model)
    with capture_output() as captured:
        ip.run_cell_magic("chat", "--cell", "revenue by region")
    assert ip.rl_next_input == "sales.groupby('region').revenue.sum()"
    asked = str(model.requests[0][-1]["content"])
    assert asked.startswith("revenue by region") and "code block" in asked
    assert plain(captured)[-1] == PROPOSED


def test_chat_cell_without_code_says_so_and_proposes_nothing(ip: InteractiveShell) -> None:
    session(ScriptedModel([reply("I need to know the table first.")]))
    ip.rl_next_input = None
    with capture_output() as captured:
        ip.run_cell_magic("chat", "--cell", "revenue by region")
    assert getattr(ip, "rl_next_input", None) is None
    assert plain(captured)[-1] == "no code block in the reply, so no cell was proposed"


@pytest.mark.parametrize(
    ("markdown", "code"),
    [
        ("```\nx\n```", "x"),
        ("~~~py\nx = 1\n\ny = 2\n~~~\n", "x = 1\n\ny = 2"),
        ("```python\na\n```\n````\n```inner```\n````", "```inner```"),
        ("```python\nnot closed", None),
        ("no code", None),
    ],
    ids=["bare", "tildes", "longer-fence", "open", "none"],
)
def test_the_last_complete_code_block_becomes_the_cell(ip: InteractiveShell, markdown: str,
                                                       code: str | None) -> None:
    session(ScriptedModel([reply(markdown)]))
    ip.rl_next_input = None
    with capture_output():
        ip.run_cell_magic("chat", "--cell", "the code, please")
    assert getattr(ip, "rl_next_input", None) == code


@pytest.mark.parametrize(("cell_asked", "proposed", "small_model", "closing"), [
    (True, False, True, ["no code block in the reply, so no cell was proposed", "footer"]),
    (True, True, False, [PROPOSED]),
    (False, True, True, [PROPOSED, "footer"]),
    (False, False, False, []),
], ids=["asked-none-small", "asked-proposed", "tool-proposed-small", "plain"])
def test_every_line_under_a_reply_is_decided_by_finish_in_one_order(
        ip: InteractiveShell, cell_asked: bool, proposed: bool, small_model: bool,
        closing: list[str]) -> None:
    """Why it stopped, the cost, then the cell lines and the footer: one place, one order."""
    result = ChatResult(text="the reply", stop_message="Stopped after 3 rounds.", cost=0.5)
    with capture_output() as captured:
        ChatDisplay().finish(result, cell_asked=cell_asked, proposed=proposed,
                             small_model=small_model)
    shown = plain(captured)
    footer = [line for line in shown if line.startswith("answered by SmolLM2")]
    assert len(footer) == int(small_model)
    assert shown == ["the reply", "Stopped after 3 rounds.", "this cell cost $0.5000",
                     *[footer[0] if c == "footer" else c for c in closing]]
