"""A server's request for input (`_elicit`), with the SDK's own request types and a user
stand-in that answers each question in turn: whether to answer, each field typed by its
schema (defaults on Enter, a wrong value asked again), the answer shown before it is sent.
An empty answer never accepts; `n` declines; where no one can answer it is refused. A live
server asking through a real call is tests/real/test_mcp_elicit.py's."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from nbagent.agent.mcp._elicit import answer
from nbagent.approval import NoOneToAsk

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 2},
        "age": {"type": "integer", "description": "in years", "minimum": 0},
        "score": {"type": "number", "default": 9.5},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
        "plan": {"type": "string", "oneOf": [{"const": "f", "title": "Free"},
                                              {"const": "p", "title": "Pro"}]},
        "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "Alpha"},
                                                      {"const": "b", "title": "Beta"}]}},
        "verified": {"type": "boolean"},
    },
    "required": ["name", "age"],
}


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


def form(schema: dict[str, Any] | None = None, message: str = "Tell me about you.") -> Any:
    return types.ElicitRequestFormParams(message=message, requested_schema=schema or SCHEMA)


def ask(params: Any, user: User | None) -> tuple[Any, list[str]]:
    said: list[str] = []
    return answer(params, server="crm", tool="signup", ask=user, say=said.append), said


def test_each_field_is_asked_typed_by_its_schema_and_the_answer_shown_before_it_is_sent(
        ) -> None:
    user = User("y", "Ada", "x", "36", "", "2", "pro", "1, Beta", "yes", "y")
    result, said = ask(form(), user)
    assert result == types.ElicitResult(action="accept", content={
        "name": "Ada", "age": 36, "score": 9.5, "status": "inactive", "plan": "p",
        "tags": ["a", "b"], "verified": True})
    first = user.questions[0]
    assert first.startswith("nbagent: the MCP server 'crm' asks you for input (during its tool "
                            "signup) — the server, not nbagent, gets what you type:\n  Tell me "
                            "about you.\n  It asks for: name, age, score, status, plan, tags, "
                            "verified\nAnswer? [y] fill them in · [n] decline · [c] cancel: ")
    assert user.questions[1] == "  Your name [name] (text; needed): "
    assert user.questions[2] == "  age — in years (a whole number; needed): "
    assert user.questions[3].startswith("  ('x' is not a whole number; try again)\n  age")
    assert user.questions[4] == "  score (a number; Enter for 9.5): "
    assert user.questions[5] == ("  status (one of: 1 active, 2 inactive; Enter for "
                                 "\"active\"): ")
    assert user.questions[7] == ("  tags (any of: 1 Alpha, 2 Beta, separated by commas; Enter "
                                 "to leave it out): ")
    assert user.questions[-1].startswith("nbagent: send to the MCP server 'crm': {\"name\": "
                                         "\"Ada\", \"age\": 36,")
    assert said == []


@pytest.mark.parametrize(("answers", "action"), [
    (("",), "cancel"),  # the input box focused, Enter pressed: nothing is accepted
    (("yes please",), "cancel"),
    (("n",), "decline"),
    (("c",), "cancel"),
    (("y", "Ada", "36", "", "", "", "", "", ""), "cancel"),  # Enter at "send?" sends nothing
    (("y", "Ada", "36", "", "", "", "", "", "n"), "decline"),
], ids=["empty", "unknown", "decline", "cancel", "empty-at-send", "decline-at-send"])
def test_an_empty_or_unknown_answer_never_accepts(answers: tuple[str, ...], action: str) -> None:
    result, _ = ask(form(), User(*answers))
    assert result == types.ElicitResult(action=action)


def test_a_needed_field_left_empty_or_wrong_three_times_cancels() -> None:
    result, _ = ask(form(), User("y", "", "", ""))
    assert result == types.ElicitResult(action="cancel")
    result, _ = ask(form(), User("y", "A", "B", "C"))  # minLength 2, three times
    assert result == types.ElicitResult(action="cancel")


def test_where_no_one_can_answer_the_request_is_refused_and_said() -> None:
    result, said = ask(form(), User(None))
    assert isinstance(result, types.ErrorData) and result.code == types.INVALID_REQUEST
    assert "no one can answer here" in result.message
    assert said == ["MCP server 'crm' asked for your input (during its tool signup); no one "
                    "can answer here, so it was refused"]
    result, said = ask(form(), None)  # a session that asks no one
    assert isinstance(result, types.ErrorData) and "asks no one" in said[0]


def test_an_interrupt_at_the_question_cancels() -> None:
    def interrupted(question: str) -> str:
        raise KeyboardInterrupt

    result = answer(form(), server="crm", tool=None, ask=interrupted, say=print)
    assert result == types.ElicitResult(action="cancel")


def test_what_the_server_wrote_is_shown_with_its_hidden_characters_written_out() -> None:
    schema = {"type": "object", "properties": {"pin\u200b": {"type": "string",
                                                            "description": "PIN\u202e"}}}
    user = User("n")
    ask(form(schema, message="Confirm\u2067 the transfer"), user)
    assert "Confirm⟨U+2067⟩ the transfer" in user.questions[0]
    assert "(its message carries invisible or control characters, written out as ⟨U+…⟩: " \
           "U+2067 RIGHT-TO-LEFT ISOLATE)" in user.questions[0]
    assert "It asks for: pin⟨U+200B⟩" in user.questions[0]


def test_a_request_to_open_an_address_shows_it_and_accepts_only_a_yes() -> None:
    params = types.ElicitRequestURLParams(message="Sign the form", url="https://x.example/f",
                                          elicitation_id="e1")
    user = User("y")
    assert ask(params, user)[0] == types.ElicitResult(action="accept")
    assert "It asks you to open: https://x.example/f" in user.questions[0]
    assert ask(params, User(""))[0] == types.ElicitResult(action="cancel")
