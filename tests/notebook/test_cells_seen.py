"""The cells the user ran ride with the next chat, and a chat that fails does not lose them:
through a real IPython shell with the magics loaded and a scripted model — a provider
error after the message was sent (the history keeps it: the next request shows the cells
once), a chat refused as busy before sending (the cells wait for the next chat), and the
note turned off (taken, never sent). The kernel path, where re-running a chat cell replaces
its exchange, is tests/notebook/test_cells_seen_kernel.py."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from nbagent import Settings
from nbagent.testing import ScriptedModel, provider_error, reply
from tests.notebook.helpers import plain, session

NOTE = "the cells the user ran since your last turn"


# the shell is shared by the notebook tests: the variables made here leave with them
pytestmark = pytest.mark.usefixtures("clean_namespace")


def sent_text(request: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request)


def test_a_chat_that_fails_after_sending_keeps_the_cells_for_the_next_request(
        ip: InteractiveShell) -> None:
    model = ScriptedModel([provider_error(400, "Invalid request: unsupported parameter"),
                           reply("You computed 42.")])
    agent = session(model, namespace=ip.user_ns)
    ip.run_cell("answer = 40 + 2\nanswer", store_history=True)
    with capture_output() as failed:
        ip.run_cell_magic("chat", "", "what did I get?")
    assert any("unsupported parameter" in line for line in plain(failed))  # it did fail
    assert NOTE in sent_text(model.requests[0])
    with capture_output():
        ip.run_cell_magic("chat", "", "and so?")
    sent = sent_text(model.requests[-1])
    value = "value:\n```\n42\n```"  # Out[n] as the note shows it
    assert "answer = 40 + 2" in sent and value in sent
    assert sent.count(NOTE) == 1  # the failed chat's message carries them, once
    assert sent.index(value) < sent.index("what did I get?") < sent.index("and so?")
    assert [m["content"] for m in agent.history.messages if m["role"] == "assistant"][-1] == (
        "You computed 42.")
    model.assert_consumed()


def test_a_chat_refused_as_busy_leaves_the_cells_for_the_next_one(
        ip: InteractiveShell) -> None:
    started, finish = threading.Event(), threading.Event()

    def slow(messages: list[dict[str, Any]]) -> str:
        started.set()
        assert finish.wait(60)
        return "the background answer"

    model = ScriptedModel([slow, reply("You set total to 7.")])
    agent = session(model, namespace=ip.user_ns)
    background = threading.Thread(target=agent.chat, args=("a long question",))
    background.start()
    try:
        assert started.wait(60)
        ip.run_cell("total = 3 + 4", store_history=True)  # run while the agent works
        with capture_output() as refused:
            ip.run_cell_magic("chat", "", "what is total?")
        assert any("busy" in line for line in plain(refused))
    finally:
        finish.set()
        background.join(60)
    assert len(model.requests) == 1  # the refused chat sent nothing
    with capture_output():
        ip.run_cell_magic("chat", "", "what is total now?")
    sent = model.requests[-1][-1]["content"]
    assert NOTE in sent and "total = 3 + 4" in sent
    assert sent.index("total = 3 + 4") < sent.index("what is total now?")
    with capture_output():
        ip.run_cell_magic("chat", "", "thanks")
    assert NOTE not in model.requests[-1][-1]["content"]  # sent once it was in the history


def test_with_the_note_off_the_cells_are_taken_and_never_sent(ip: InteractiveShell) -> None:
    model = ScriptedModel(default=reply("ok"))
    session(model, namespace=ip.user_ns,
            settings=Settings(max_context_tokens=8_192, see_cells=False))
    ip.run_cell("'a cell the user ran'.upper()", store_history=True)
    with capture_output():
        ip.run_cell_magic("chat", "", "hello")
    ip.run_line_magic("nbagent", "see_cells=true")
    with capture_output():
        ip.run_cell_magic("chat", "", "hello again")
    assert len(model.requests) == 2
    assert all(NOTE not in sent_text(r) and "A CELL THE USER RAN" not in sent_text(r)
               for r in model.requests)


def test_the_note_counts_in_the_conversation_row_of_context_and_in_the_meter(
        ip: InteractiveShell) -> None:
    """The note rides in the user's message, so `%context` counts it with the conversation
    and the meter's total has it: the same chat with and without a long cell before it."""

    def chat(cell: str | None) -> tuple[Any, str]:
        agent = session(ScriptedModel(default=reply("ok")))  # its own, empty namespace
        if cell is not None:
            ip.run_cell(cell, store_history=True)
        with capture_output():
            ip.run_cell_magic("chat", "", "what now?")
        with capture_output() as shown_context:
            ip.run_line_magic("context", "")
        return agent, "\n".join(plain(shown_context))

    bare, _ = chat(None)
    noted, table = chat("'a long value ' * 200")
    asked = noted.history.messages[1]
    assert asked["role"] == "user" and str(asked["content"]).startswith("[nbagent notebook note")
    note_tokens = noted.history.message_tokens(1) - bare.history.message_tokens(1)
    assert note_tokens > 300  # the value, cut to 1,500 characters, and the note's frame
    with_note, without = noted.breakdown(), bare.breakdown()
    assert with_note.conversation - without.conversation == note_tokens
    assert (with_note.memory, with_note.tool_results) == (without.memory, without.tool_results)
    assert noted.context_state().tokens - bare.context_state().tokens == note_tokens
    row = next(line for line in table.splitlines() if line.startswith("conversation"))
    assert row.split()[1] == f"{with_note.conversation:,}"


def test_secret_named_values_stay_home_wherever_the_note_would_carry_them(
        ip: InteractiveShell) -> None:
    model = ScriptedModel(default=reply("noted"))
    session(model, namespace=ip.user_ns)
    for cell in ('db_pass = "Hunter2-xyz"', "smtp = {'password': 'Pa55-word!'}",
                 'print("connecting with", db_pass)', "user_pin = 4821\nuser_pin",
                 "apiToken = 'tok_81bd77'\nf'key is {apiToken}'"):
        ip.run_cell(cell, store_history=True)
    with capture_output():
        ip.run_cell_magic("chat", "", "why does it fail?")
    sent = sent_text(model.requests[-1])
    assert NOTE in sent and "connecting with" in sent  # the cells are there
    for secret in ("Hunter2-xyz", "Pa55-word!", "4821", "tok_81bd77"):
        assert secret not in sent, secret
    assert "[hidden: db_pass is a secret]" in sent and "[hidden: user_pin is a secret]" in sent
    assert "db_pass: str (hidden" in sent  # the listing in the same request, as before


def test_an_output_in_the_note_is_not_sent_again_by_its_reference(
        ip: InteractiveShell) -> None:
    model = ScriptedModel(default=reply("noted"))
    session(model, namespace=ip.user_ns)
    ip.run_cell("part = 'forty'\npart + '-two'", store_history=True)
    number = ip.execution_count - 1
    with capture_output():
        ip.run_cell_magic("chat", "", f"explain Out[{number}] and {{Out[{number}]}}")
    sent = model.requests[-1][-1]["content"]
    assert sent.count("forty-two") == 1, sent  # in the note, once
    assert f"Out[{number}]: the output of cell {number} is in the notebook note above" in sent
    with capture_output():
        ip.run_cell_magic("chat", "", f"and Out[{number}] again?")  # no note this time
    assert "forty-two" in model.requests[-1][-1]["content"]
