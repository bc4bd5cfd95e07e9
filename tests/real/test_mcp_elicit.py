"""A server's request for input (MCP elicitation) through a real call to a real server
(tests/agent/mcp/servers/elicit_server.py, the SDK's `Context.elicit`): asked through the
session's way of asking — its fields as prompts, typed by their schema — and what the
user typed is what the server receives; declined, cancelled by an empty answer, refused
where no one can answer; and in a real kernel, asked in the front end's input box.

The tests in this process share one server (`crm`: each start costs the server the SDK's
import, ~1 CPU-s), each with an approval of its own: the server keeps nothing between
calls."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from nbagent.approval import Approval, NoOneToAsk
from nbagent.mcp import McpServers
from tests.agent.mcp.servers.launch import DEMO

pytestmark = pytest.mark.real
ELICIT = {"command": sys.executable, "args": [str(DEMO.with_name("elicit_server.py"))]}


class User:
    """Answers the questions put, in turn; `None` raises `NoOneToAsk` (a batch run)."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.questions: list[str] = []

    def __call__(self, question: str) -> str:
        self.questions.append(question)
        given = self.answers.pop(0)
        if given is None:
            raise NoOneToAsk("batch")
        return given


@pytest.fixture(scope="module")
def statuses() -> list[str]:
    return []


@pytest.fixture(scope="module")
def crm(statuses: list[str]) -> Iterator[McpServers]:
    """The module's elicit server; each test gives it an approval of its own."""
    with McpServers({"crm": ELICIT}, on_status=statuses.append) as servers:
        yield servers


def servers_for(crm: McpServers, user: User) -> McpServers:
    # a fresh approval, as a new session has; the call itself is allowed: only the
    # server's own questions reach the user
    crm.approval = Approval(user, allowed=[("mcp", "crm")])
    return crm


@pytest.fixture
def answered(crm: McpServers) -> tuple[McpServers, User]:
    user = User("y", "Ada Lovelace", "thirty-six", "36", "2", "", "y")
    return servers_for(crm, user), user


def test_the_fields_are_asked_typed_and_the_server_gets_what_was_typed(
        answered: tuple[McpServers, User]) -> None:
    servers, user = answered
    text, is_error = servers.call("crm", "signup", {"reason": "the beta"})
    assert not is_error
    assert text == ("accept: {'name': 'Ada Lovelace', 'age': 36, 'plan': 'pro', "
                    "'newsletter': False}")
    assert user.questions[0].startswith(
        "nbagent: the MCP server 'crm' asks you for input (during its tool signup) — the "
        "server, not nbagent, gets what you type:\n  Sign-up for the beta: your details, "
        "please.\n  It asks for: name, age, plan, newsletter\nAnswer?")
    assert user.questions[2] == "  Age — In years (a whole number; needed): "
    assert user.questions[3].startswith("  ('thirty-six' is not a whole number; try again)")
    assert user.questions[-1].startswith("nbagent: send to the MCP server 'crm': ")


@pytest.mark.parametrize(("answers", "result"), [
    (("n",), "decline: None"),
    (("",), "cancel: None"),  # Enter in a focused input box accepts nothing
], ids=["declined", "empty"])
def test_declined_or_left_empty_nothing_is_sent(answers: tuple[str, ...], result: str,
                                                crm: McpServers) -> None:
    user = User(*answers)
    assert servers_for(crm, user).call("crm", "signup", {"reason": "x"}) == (result, False)
    assert user.answers == []  # each answer was asked for


def test_where_no_one_can_answer_it_is_refused_and_said(crm: McpServers,
                                                       statuses: list[str]) -> None:
    said = len(statuses)
    text, is_error = servers_for(crm, User(None)).call("crm", "signup", {"reason": "x"})
    assert is_error and "no one can answer here" in text
    assert "MCP server 'crm' asked for your input (during its tool signup); no one can " \
           "answer here, so it was refused" in statuses[said:]  # said by this call


def test_in_a_kernel_the_fields_are_the_front_ends_input_prompts() -> None:
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(DEMO.parents[4]))
    client = manager.client()
    client.start_channels()
    outputs: list[str] = []
    prompts: list[str] = []
    typed = iter(["y", "Grace Hopper", "85", "", "yes", "y"])

    def keep(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream":
            outputs.append(message["content"]["text"])

    def answer(message: dict[str, Any]) -> None:  # the front end's input box
        prompts.append(message["content"]["prompt"])
        client.input(next(typed))

    # one agent (and one server) for both cells
    start = textwrap.dedent(f"""
        import sys
        from nbagent import Agent
        from nbagent.testing import ScriptedModel, calls, reply
        agent = Agent(model=ScriptedModel([calls(("signup", {{"reason": "lab"}})),
                                           reply("done")] * 2), builtin_tools=False,
                      archive=False, mcp_servers={{"crm": {ELICIT!r}}})
        agent.approval.allow("mcp", "crm")
    """)
    chat = textwrap.dedent("""
        agent.chat("sign me up")
        print([m["content"] for m in agent.history if m["role"] == "tool"][-1:])
    """)
    try:
        client.wait_for_ready(timeout=60)
        client.execute_interactive(start + chat, output_hook=keep, stdin_hook=answer,
                                   allow_stdin=True, timeout=180)
        assert len(prompts) == 6 and prompts[0].startswith(
            "nbagent: the MCP server 'crm' asks you for input (during its tool signup)")
        assert prompts[3] == '  Plan (one of: 1 free, 2 pro; Enter for "free"): '
        assert ("accept: {'name': 'Grace Hopper', 'age': 85, 'plan': 'free', "
                "'newsletter': True}") in "".join(outputs)
        outputs.clear()
        client.execute_interactive(chat + "agent.close()\n", output_hook=keep,
                                   allow_stdin=False, timeout=180)
        assert "no one can answer here" in "".join(outputs)  # a batch run: refused
        assert len(prompts) == 6
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
