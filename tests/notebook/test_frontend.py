"""Which front end runs a cell, and what a chat prints where outputs cannot be redrawn: a
notebook (its request names the cell) and a headless executor (`allow_stdin` off) redraw in
place; terminal IPython and a console (a request with neither) get each thing once — the
reply on stdout as it streams, tool lines once, no waiting line, the meter after the cell."""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatDisplay, updates_in_place

from nbagent import ChatResult
from nbagent.events import Retrying, Status, ToolFinished, ToolStarted
from nbagent.testing import ScriptedModel, calls, reply
from tests.notebook.helpers import session


class Kernel:
    """What `updates_in_place` reads of ipykernel: the running request."""

    def __init__(self, parent: Any) -> None:
        self.parent = parent

    def get_parent(self) -> Any:
        if isinstance(self.parent, Exception):
            raise self.parent
        return self.parent


class Shell:
    def __init__(self, kernel: Any = None) -> None:
        if kernel is not None:
            self.kernel = kernel


class TerminalInteractiveShell(Shell):
    """Named as IPython's terminal shell is."""


class MyTerminal(TerminalInteractiveShell):
    """A subclass of it (as an embedded terminal shell is)."""


def request(metadata: dict[str, Any], allow_stdin: bool) -> dict[str, Any]:
    return {"header": {"msg_type": "execute_request"}, "metadata": metadata,
            "content": {"code": "%chat hi", "allow_stdin": allow_stdin}}


@pytest.mark.parametrize(("shell", "in_place"), [
    (Shell(Kernel(request({"cellId": "c1"}, True))), True),
    (Shell(Kernel(request({"cellId": "c1", "deletedCells": []}, False))), True),
    (Shell(Kernel(request({}, False))), True),
    (Shell(Kernel(request({}, True))), False),
    (Shell(Kernel(request({"cellId": ""}, True))), False),
    (Shell(Kernel({})), True),
    (Shell(Kernel(RuntimeError("no parent"))), True),
    (Shell(), True),
    (TerminalInteractiveShell(), False),
    (MyTerminal(), False),
], ids=["notebook", "notebook-no-stdin", "nbclient", "console", "empty-cell-id",
        "no-request", "old-kernel", "embedded-shell", "terminal", "terminal-subclass"])
def test_which_front_ends_redraw_in_place(shell: Any, in_place: bool) -> None:
    assert updates_in_place(shell) is in_place


def test_a_terminal_chat_prints_each_thing_once(ip: InteractiveShell) -> None:
    view = ChatDisplay(live=False)
    with capture_output() as captured:
        view.status("thinking…")
        view(Status("thinking…"))
        view(ToolStarted("c1", "list_variables", "{}"))
        view(ToolFinished("c1", "list_variables", True, 12, 12, "rows: int"))
        view.on_text("The \x1b[31manswer")
        view(Retrying(attempt=1, wait_s=2, error="503 Service Unavailable"))
        view.on_text("The answer")
        view.on_text(" is 42.")
        view.finish(ChatResult(text="The answer is 42.", stop_message="Stopped after 3 rounds."))
    assert captured.stdout == "The answer\nThe answer is 42.\n"  # as it streamed, once
    assert not any(o.update or (o.transient or {}).get("display_id") for o in captured.outputs)
    assert [o.data["text/plain"] for o in captured.outputs] == [
        "list_variables() → 12 chars", "retrying in 2 s (provider unavailable)",
        "Stopped after 3 rounds."]


def test_a_terminal_chat_prints_a_reply_that_did_not_stream(ip: InteractiveShell) -> None:
    with capture_output() as captured:
        ChatDisplay(live=False).finish(ChatResult(text="42\x1b]0;title\x07"))
    assert captured.stdout == "42\n" and not captured.outputs


def test_a_chat_from_a_console_prints_the_meter_once_after_the_cell(
        ip: InteractiveShell) -> None:
    session(ScriptedModel([calls(("list_variables", {})), reply("There is one variable.")]))
    ip.kernel = Kernel(request({}, True))  # jupyter console: no cell named, input allowed
    try:
        with capture_output() as captured:
            ip.run_cell("%chat what is here?")
    finally:
        del ip.kernel
    assert captured.stdout == "There is one variable.\n"
    assert not any(o.update or (o.transient or {}).get("display_id") for o in captured.outputs)
    said = [o.data["text/plain"] for o in captured.outputs]
    assert said[0].startswith("list_variables() → ")
    assert [bool(re.search(r"\d+% context left", s)) for s in said] == [False, True]


def test_the_same_chat_from_a_notebook_redraws_in_place(ip: InteractiveShell) -> None:
    session(ScriptedModel([calls(("list_variables", {})), reply("There is one variable.")]))
    ip.kernel = Kernel(request({"cellId": "c1"}, True))
    try:
        with capture_output() as captured:
            ip.run_cell("%chat what is here?")
    finally:
        del ip.kernel
    assert captured.stdout == ""
    assert any(o.update for o in captured.outputs)  # the meter and the status, redrawn
