"""Asking the user before something from outside acts: `Approval` holds what the user has
allowed (scopes such as `("mcp", "db")` for a server or `("mcp", "db", "query")` for one
of its tools) and the `ask` callable that puts the question. Generic on purpose: MCP tool
calls use it now, and any other action that needs a yes can describe itself as an
`ApprovalRequest`.

The default `ask` is the builtin `input()`: in a kernel that is the front end's input
prompt while the cell runs. Where no one can answer (a batch run: ipykernel raises
StdinNotImplementedError; EOFError; a plain process without a terminal), the action is
refused, and the refusal is text the model reads.
"""

from __future__ import annotations

import builtins
import inspect
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ._inert_text import strip_hidden

Scope = tuple[str, ...]
MAX_SHOWN = 2_000  # characters of the details shown in a question

ANSWERS = "[y] yes, once · [t] always for this tool · [s] always for this server · [n] no"


class NoOneToAsk(Exception):
    """Raised by an `ask` callable when no one can answer here."""


@dataclass(frozen=True)
class ApprovalRequest:
    """One action that needs the user's yes.

    Args:
        action: what would happen, in a few words ("call the MCP tool").
        subject: what acts (the tool's name).
        source: where it comes from ("MCP server 'db'").
        details: what exactly (the arguments).
        scopes: the scopes that allow it, narrowest first (a tool, then its server); an
            "always" answer adds one of them for the rest of the session.
    """

    action: str
    subject: str
    source: str
    details: Any
    scopes: tuple[Scope, ...]

    def question(self) -> str:
        """The question put to the user: what, from where, with which details."""
        shown = self.details if isinstance(self.details, str) else _as_json(self.details)
        if len(shown) > MAX_SHOWN:
            shown = shown[:MAX_SHOWN] + f"… ({len(shown):,} characters)"
        # Every part came from outside (a server's names, the model's arguments): the
        # question is printed in a terminal too, so none may carry a control sequence.
        return strip_hidden(f"nbagent: the model wants to {self.action} {self.subject} "
                            f"({self.source}) with:\n  {shown}\nAllow? {ANSWERS}: ")


@dataclass(frozen=True)
class Verdict:
    """The user's answer: `allowed`, and for a refusal the text the model reads."""

    allowed: bool
    reason: str = ""


def _as_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


class _UserClock:
    """Seconds spent waiting for the user's answer, all questions together. A tool's time
    limit counts only the tool's own work: a question the user reads for five minutes must
    not make the call it allows time out (run_tool adds these seconds to its limit)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = 0.0
        self._open: dict[int, tuple[int, float]] = {}  # thread -> (depth, since)

    @contextmanager
    def waiting(self) -> Iterator[None]:
        # Re-entrant per thread: Approval.decide asking through ask_with_input counts once.
        me = threading.get_ident()
        with self._lock:
            depth, since = self._open.get(me, (0, time.monotonic()))
            self._open[me] = (depth + 1, since)
        try:
            yield
        finally:
            with self._lock:
                depth, since = self._open.pop(me)
                if depth > 1:
                    self._open[me] = (depth - 1, since)
                else:
                    self._total += time.monotonic() - since

    def seconds(self) -> float:
        """Seconds waited so far, the questions still open included."""
        now = time.monotonic()
        with self._lock:
            return self._total + sum(now - since for _, since in self._open.values())


USER_CLOCK = _UserClock()


def ask_with_input(question: str) -> str:
    """The default way to ask: the builtin `input()` as it is now (a kernel replaces it
    with its front end's prompt while a cell runs). Raises `NoOneToAsk` where no one can
    answer."""
    reader = builtins.input
    # The interpreter's own input() reads stdin: without a terminal there is no one
    # there (a script run in the background, a pipe), so do not read data meant for
    # something else. A kernel's input() is not the builtin one and asks its front end.
    if inspect.isbuiltin(reader) and (sys.stdin is None or not sys.stdin.isatty()):
        raise NoOneToAsk("no terminal")
    try:
        with USER_CLOCK.waiting():
            return str(reader(question))
    except (EOFError, NotImplementedError, RuntimeError) as error:
        # StdinNotImplementedError (a NotImplementedError) is ipykernel's "no front end
        # takes input" in a batch run; RuntimeError is input() with sys.stdin lost
        raise NoOneToAsk(type(error).__name__) from None


class Approval:
    """What the user has allowed, and how to ask about the rest.

        approval = Approval()                 # asks with input()
        approval.allow("mcp", "files")        # every tool of the server 'files'
        approval.allow("mcp", "db", "query")  # one tool
        Approval(ask=None)                    # never asks: anything not allowed is refused

    Args:
        ask: called with the question; returns the answer (`y`, `t`, `s`, `n`), raises
            `NoOneToAsk` when no one can answer. None never asks.
        allowed: scopes allowed from the start (as `allow` takes them).
    """

    def __init__(self, ask: Callable[[str], str] | None = ask_with_input, *,
                 allowed: Iterable[Sequence[str]] = ()) -> None:
        self.ask = ask
        self._allowed: set[Scope] = {tuple(scope) for scope in allowed}
        self._lock = threading.Lock()  # one question at a time

    def allow(self, *scope: str) -> None:
        """Allow everything under `scope` for the rest of the session."""
        if not scope:
            raise ValueError("allow() needs a scope, e.g. allow('mcp', 'server')")
        self._allowed.add(tuple(scope))

    def revoke(self, *scope: str) -> list[Scope]:
        """Take back `scope` and every narrower scope under it; returns those removed."""
        gone = [s for s in self._allowed if s[:len(scope)] == scope]
        self._allowed.difference_update(gone)
        return gone

    def allowed(self) -> list[Scope]:
        """The scopes allowed now."""
        return sorted(self._allowed)

    def is_allowed(self, scope: Sequence[str]) -> bool:
        """Whether `scope` (or a broader scope holding it) is allowed."""
        wanted = tuple(scope)
        return any(wanted[:len(s)] == s for s in self._allowed)

    def decide(self, request: ApprovalRequest) -> Verdict:
        """Allowed already, or the user's answer to the question; never raises."""
        if any(self.is_allowed(scope) for scope in request.scopes):
            return Verdict(True)
        what = f"{request.subject} ({request.source})"
        if self.ask is None:
            return Verdict(False, f"{what} was not run: it needs the user's approval, and "
                           "this session asks no one (allow it first)")
        with self._lock:
            try:
                with USER_CLOCK.waiting():
                    answer = self.ask(request.question())
            except NoOneToAsk:
                return Verdict(False, f"{what} was not run: it needs the user's approval and "
                               "no one can answer here (a batch run?); the user can allow it "
                               "beforehand")
            except KeyboardInterrupt:
                raise
            except Exception as error:  # a broken ask is a refusal, never a crash
                return Verdict(False, f"{what} was not run: asking the user failed "
                               f"({type(error).__name__})")
        choice = str(answer).strip().lower()[:1]
        if choice == "t" and request.scopes:
            self.allow(*request.scopes[0])
        elif choice == "s" and len(request.scopes) > 1:
            self.allow(*request.scopes[1])
        elif choice not in ("y", "t", "s"):
            return Verdict(False, f"the user did not allow {what} to run")
        return Verdict(True)
