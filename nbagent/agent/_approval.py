"""Asking the user before something from outside acts — an MCP tool call, the model's
code — through one mechanism: `ANSWERS`, the one table of what the user may answer;
`ApprovalRequest`, one action and the question put about it (shown exactly: whole, every
hidden character written `⟨U+XXXX⟩` and flagged); `Approval`, what the user has allowed
(scopes such as `("code",)`, `("mcp", "db")` for a server, `("mcp", "db", "query")` for one
of its tools, listed and revoked) and the one place that asks (`decide`).

An empty or unrecognised answer runs nothing: the question is asked again, at most
`MAX_ASKS` times in all, then the action is refused. Where no one can answer (a batch run:
ipykernel raises StdinNotImplementedError; EOFError; a plain process without a terminal)
the action is refused, and the refusal is text the model reads. How the question reaches
the user and how an interrupt cancels it: `_asking`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._asking import (
    USER_CLOCK,
    Interrupted,
    NoOneToAsk,
    ask_with_input,
    put_question,
)
from ._inert_text import hidden_in, visible

Scope = tuple[str, ...]
CODE_SCOPE: Scope = ("code",)  # every piece of code the model runs
MAX_ASKS = 3  # an empty or unrecognised answer asks again; after this many, refused
ONE_LINE_JSON = 120  # arguments up to this long are shown on one line, longer ones indented


@dataclass(frozen=True)
class Choice:
    """One answer the user may give: the letter typed, the words also taken for it, what
    the question says of it, whether the action goes ahead now, which of the request's
    scopes it allows for the rest of the session (an "always" answer; None: none), and
    what the notebook says of the action after it."""

    key: str
    words: tuple[str, ...]
    says: str
    runs: bool
    keeps: int | None
    note: str


# The one table of answers. A request offers some of them (`ApprovalRequest.answers`); the
# question, the reading of what was typed, the notebook's notes and the docs are made
# from these rows (docs/architecture.md, "An answer to a question the user is asked").
ANSWERS: tuple[Choice, ...] = (
    Choice("y", ("yes",), "yes, once", True, None, "running…"),
    Choice("c", ("cell",), "take it as a new cell below, unrun", False, None,
           "not run: it is in a new cell below, for you to run"),
    Choice("t", ("tool",), "always for this tool", True, 0,
           "running… (this tool runs without asking for the rest of the session)"),
    Choice("s", ("server",), "always for this server", True, 1,
           "running… (this server's tools run without asking for the rest of the session)"),
    Choice("a", ("all",), "always for all code in this session", True, 0,
           "running… (the model's code runs without asking for the rest of the session)"),
    Choice("n", ("no",), "no", False, None, "not run: you declined"),
)
CHOICES = {choice.key: choice for choice in ANSWERS}
MCP_ANSWERS = "ytsn"
CODE_ANSWERS = "ycan"
# How a request ended without an answer from the table, and what the notebook says then.
UNANSWERED = {
    "allowed": "running… (allowed for this session)",
    "no one": "not run: no one can answer here (a batch run)",
    "asks no one": "not run: this session asks no one",
    "interrupted": "not run: interrupted",
    "unclear": f"not run: no answer nbagent understood in {MAX_ASKS} tries",
    "failed": "not run: asking failed",
}


OFFERED = {"the model's code": CODE_ANSWERS, "an MCP tool call": MCP_ANSWERS}


def describe_answers() -> str:
    """The table of answers as Markdown (docs/tools.md shows it): what to type, what else
    is taken for it, which questions offer it, and what the chat cell says after it."""
    rows = ["| type | also taken | offered for | what it does: the note the code's header "
            "then shows |", "|---|---|---|---|"]
    for choice in ANSWERS:
        offered = " and ".join(kind for kind, keys in OFFERED.items() if choice.key in keys)
        also = ", ".join(f"`{word}`" for word in choice.words)
        rows.append(f"| `{choice.key}` | {also} | {offered} | {choice.says}: "
                    f"*{choice.note}* |")
    rows.append(f"| anything else, or nothing | | both | asked again (at most {MAX_ASKS} "
                f"times in all), then refused: *{UNANSWERED['unclear']}* |")
    return "\n".join(rows)


def outcome_note(outcome: str) -> str:
    """What the notebook says of an action after its `Verdict.outcome`."""
    choice = CHOICES.get(outcome)
    return choice.note if choice is not None else UNANSWERED.get(outcome, outcome)


def scope_words(scope: Sequence[str]) -> str:
    """A scope as the user reads it: "all code the model runs", "every tool of the MCP
    server 'db'", "the MCP tool 'query' of 'db'"."""
    scope = tuple(scope)
    if scope == CODE_SCOPE:
        return "all code the model runs"
    if scope[:1] == ("mcp",) and len(scope) == 2:
        return f"every tool of the MCP server {scope[1]!r}"
    if scope[:1] == ("mcp",) and len(scope) == 3:
        return f"the MCP tool {scope[2]!r} of {scope[1]!r}"
    return " ".join(scope)


def allowed_line(scopes: Sequence[Scope], run_code: str) -> str:
    """What runs without asking, in one line (`%nbagent` shows it): the scopes allowed,
    and all code under `run_code="auto"`, the setting's standing answer."""
    words = [scope_words(scope) for scope in scopes]
    if run_code == "auto" and CODE_SCOPE not in scopes:
        words.insert(0, "all code the model runs (run_code='auto')")
    if not words:
        return "allowed without asking: nothing — each action asks you first"
    return (f"allowed without asking: {'; '.join(words)} (agent.approval.revoke(...) takes "
            "one back)")


@dataclass(frozen=True)
class ApprovalRequest:
    """One action that needs the user's yes.

    Args:
        action: what would happen, in a few words ("call the MCP tool").
        subject: what acts (the tool's name).
        source: where it comes from ("MCP server 'db'").
        details: what exactly (the arguments, the code), shown whole.
        scopes: the scopes that allow it, narrowest first (a tool, then its server); an
            "always" answer adds the one its row names for the rest of the session.
        answers: the keys of `ANSWERS` offered, in the question's order (MCP's by default).
        shown_at: where the details are shown whole instead of in the question ("above,
            in the chat cell"); empty: in the question.
    """

    action: str
    subject: str
    source: str
    details: Any
    scopes: tuple[Scope, ...]
    answers: str = MCP_ANSWERS
    shown_at: str = ""

    def __post_init__(self) -> None:
        unknown = [key for key in self.answers if key not in CHOICES]
        if unknown:
            raise ValueError(f"{', '.join(map(repr, unknown))} not an answer (ANSWERS has "
                             f"{', '.join(CHOICES)})")

    def choices(self) -> list[Choice]:
        """The answers offered: those of `answers` whose scope the request has."""
        offered = [CHOICES[key] for key in self.answers]
        return [c for c in offered if c.keeps is None or c.keeps < len(self.scopes)]

    def choose(self, typed: str) -> Choice | None:
        """The row the user's answer means, or None (empty, or not one of the offered)."""
        word = typed.strip().lower().rstrip(".!")
        for choice in self.choices():
            if word == choice.key or word in choice.words:
                return choice
        return None

    def details_text(self) -> str:
        """The details as they go to the action, exactly: code as it is, arguments as
        JSON in the order the model gave them (short ones on one line)."""
        if isinstance(self.details, str):
            return self.details
        one_line = _as_json(self.details)
        return one_line if len(one_line) <= ONE_LINE_JSON else _as_json(self.details, indent=2)

    def header(self) -> str:
        return f"nbagent: the model wants to {self.action} {self.subject} ({self.source})"

    def hidden_warning(self) -> str:
        """One line naming the hidden characters in the request (empty when none)."""
        raw = f"{self.header()}\n{self.details_text()}"
        names = hidden_in(raw)
        if not names:
            return ""
        count = visible(raw).count("⟨U+") - raw.count("⟨U+")
        plural = "s" if count != 1 else ""
        return (f"⚠ {count} hidden character{plural}, shown as ⟨U+…⟩: {', '.join(names)}"
                f" — they are part of what would run")

    def answer_line(self) -> str:
        return " · ".join(f"[{c.key}] {c.says}" for c in self.choices())

    def question(self) -> str:
        """The question put to the user: what, from where, the details whole (or where
        they are shown whole), the hidden characters flagged, the answers. Everything in
        it came from outside: it goes through `visible`, so nothing in it is drawn or
        acted on and nothing is dropped."""
        details = self.details_text()
        if self.shown_at:
            lines = details.count("\n") + 1
            body = (f"  ({lines} line{'s' if lines != 1 else ''}, "
                    f"{len(details):,} characters, shown whole {self.shown_at})")
        else:
            body = details if isinstance(self.details, str) else f"  {details}"
        warning = self.hidden_warning()
        said = ":" if isinstance(self.details, str) else " with:"
        parts = [f"{self.header()}{said}", body, *([warning] if warning else []),
                 f"Allow? {self.answer_line()}: "]
        return visible("\n".join(parts))

    def asked_again(self, typed: str) -> str:
        """The short question asked after an answer that was not one of the offered."""
        said = "an empty answer" if not typed.strip() else f"{typed.strip()[:40]!r}"
        return visible(f"nbagent: {said} is not one of the answers — nothing ran. Allow "
                       f"{self.subject} ({self.source})? {self.answer_line()}: ")


@dataclass(frozen=True)
class Verdict:
    """How a request ended: `allowed`; for a refusal the text the model reads; `outcome`,
    the key of the user's answer (a row of `ANSWERS`) or how it ended without one (a key
    of `UNANSWERED`)."""

    allowed: bool
    reason: str = ""
    outcome: str = "allowed"


def _as_json(value: Any, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


class Approval:
    """What the user has allowed, and the one place the user is asked about the rest.

        approval = Approval()                 # asks with input()
        approval.allow("code")                # all code the model runs
        approval.allow("mcp", "files")        # every tool of the server 'files'
        approval.allow("mcp", "db", "query")  # one tool
        approval.allowed()                    # what is allowed now
        approval.revoke("mcp", "db")          # the server and its tools ask again
        Approval(ask=None)                    # never asks: anything not allowed is refused

    Args:
        ask: called with the question; returns what the user typed (one of the answers
            the question offers), raises `NoOneToAsk` when no one can answer. None never
            asks.
        allowed: scopes allowed from the start (as `allow` takes them).
    """

    def __init__(self, ask: Callable[[str], str] | None = ask_with_input, *,
                 allowed: Iterable[Sequence[str]] = ()) -> None:
        self.ask = ask
        self._allowed: set[Scope] = {tuple(scope) for scope in allowed}
        self._lock = threading.Lock()  # one question at a time where asked directly

    def allow(self, *scope: str) -> None:
        """Allow everything under `scope` for the rest of the session."""
        if not scope:
            raise ValueError("allow() needs a scope, e.g. allow('code') or "
                             "allow('mcp', 'server')")
        self._allowed.add(tuple(scope))

    def revoke(self, *scope: str) -> list[Scope]:
        """Take back `scope` and every narrower scope under it (no scope: everything);
        returns those removed."""
        gone = [s for s in self._allowed if s[:len(scope)] == scope]
        self._allowed.difference_update(gone)
        return sorted(gone)

    def allowed(self) -> list[Scope]:
        """The scopes allowed now."""
        return sorted(self._allowed)

    def is_allowed(self, scope: Sequence[str]) -> bool:
        """Whether `scope` (or a broader scope holding it) is allowed."""
        wanted = tuple(scope)
        return any(wanted[:len(s)] == s for s in self._allowed)

    def decide(self, request: ApprovalRequest) -> Verdict:
        """Allowed already, or the user's answer to the question; never raises but for
        the user's interrupt where the question is asked on this very thread."""
        if any(self.is_allowed(scope) for scope in request.scopes):
            return Verdict(True)
        what = f"{request.subject} ({request.source})"
        ask = self.ask
        if ask is None:
            return Verdict(False, f"{what} was not run: it needs the user's approval, and "
                           "this session asks no one (allow it first)", "asks no one")
        try:
            with USER_CLOCK.waiting():
                choice = self._answer(ask, request)
        except NoOneToAsk:
            return Verdict(False, f"{what} was not run: it needs the user's approval and "
                           "no one can answer here (a batch run?); the user can allow it "
                           "beforehand", "no one")
        except Interrupted:
            return Verdict(False, f"{what} was not run: the user interrupted while the "
                           "question waited", "interrupted")
        except KeyboardInterrupt:
            raise
        except Exception as error:  # a broken ask is a refusal, never a crash
            return Verdict(False, f"{what} was not run: asking the user failed "
                           f"({type(error).__name__})", "failed")
        if choice is None:
            return Verdict(False, f"{what} was not run: the user gave no answer nbagent "
                           f"understood in {MAX_ASKS} tries", "unclear")
        if choice.keeps is not None:
            self.allow(*request.scopes[choice.keeps])
        if not choice.runs:
            return Verdict(False, f"the user did not allow {what} to run", choice.key)
        return Verdict(True, outcome=choice.key)

    def _answer(self, ask: Callable[[str], str], request: ApprovalRequest) -> Choice | None:
        question = request.question()
        for _ in range(MAX_ASKS):
            with self._lock:
                typed = put_question(ask, question)
            choice = request.choose(typed)
            if choice is not None:
                return choice
            question = request.asked_again(typed)
        return None
