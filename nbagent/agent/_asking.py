"""Where a question to the user is put, and who waits for the answer. A tool runs in a
thread of its own, while the user's interrupt (the kernel's ■, Ctrl-C) reaches only the
thread that chats: a question asked in the tool's thread could not be interrupted, and
in a kernel its input request would stay open after the turn ended, taking the answer the
user typed for a later question. So the thread that waits for a tool serves its questions
(`answered_here`, `QuestionDesk.wait`): the question is asked where the interrupt lands,
an interrupt cancels it, and once the turn has moved on a question still to come is
refused at once — no later answer applies to it and no later call waits for it; work
the call has not started by then does not start (`call_over`).

`USER_CLOCK` counts the seconds spent waiting for the user, so a tool's time limit counts
only the tool's own work. `ask_with_input` is the default way to ask: `input()`.
"""

from __future__ import annotations

import builtins
import inspect
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


class NoOneToAsk(Exception):
    """Raised by an `ask` callable when no one can answer here."""


class Interrupted(Exception):
    """The user interrupted while the question waited, or the turn it belonged to ended
    before it was answered: nothing it asked about may run."""


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
        # Re-entrant per thread: a question asked again counts once.
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
        return str(reader(question))
    except (EOFError, NotImplementedError, RuntimeError) as error:
        # StdinNotImplementedError (a NotImplementedError) is ipykernel's "no front end
        # takes input" in a batch run; RuntimeError is input() with sys.stdin lost
        raise NoOneToAsk(type(error).__name__) from None


@dataclass
class _Question:
    ask: Callable[[str], str]
    text: str
    answer: Future[str] = field(default_factory=Future)


class QuestionDesk:
    """The questions of one tool call, put by the thread that waits for it."""

    def __init__(self, outer: QuestionDesk | None = None) -> None:
        self._lock = threading.Lock()
        self._pending: list[_Question] = []
        self._arrived: Future[None] = Future()
        self._closed = False
        self._server = threading.get_ident()
        # A tool run inside a tool (a delegated task's own calls) is served by a thread that
        # is itself waited for: its questions go on to that thread's server, so every
        # question is put where the user's interrupt lands.
        self._outer = outer

    def _ask_here(self, ask: Callable[[str], str], text: str) -> str:
        return self._outer.put(ask, text) if self._outer is not None else str(ask(text))

    def put(self, ask: Callable[[str], str], text: str) -> str:
        """Ask `text` with `ask` on the serving thread and return the answer; raises what
        `ask` raised, or `Interrupted` when the turn ended first."""
        if threading.get_ident() == self._server:
            return self._ask_here(ask, text)
        question = _Question(ask, text)
        with self._lock:
            if self._closed:
                raise Interrupted("the turn ended before the question was asked")
            self._pending.append(question)
            if not self._arrived.done():
                self._arrived.set_result(None)
        return question.answer.result()

    def wait(self, future: Future[str], timeout: float | None) -> bool:
        """Wait for `future`, answering its questions here meanwhile, until it is done
        (True), or a question was answered or `timeout` seconds passed (False: the caller
        reckons its time again)."""
        waited: list[Future[Any]] = [future, self._arrived]
        wait(waited, timeout=timeout, return_when=FIRST_COMPLETED)
        if future.done():
            return True
        with self._lock:
            pending, self._pending = self._pending, []
            if self._arrived.done():
                self._arrived = Future()
        for number, question in enumerate(pending):
            try:
                question.answer.set_result(self._ask_here(question.ask, question.text))
            except KeyboardInterrupt:
                for cancelled in pending[number:]:
                    cancelled.answer.set_exception(Interrupted("the user interrupted"))
                raise
            except Exception as error:  # NoOneToAsk, a broken ask: the asker's to judge
                question.answer.set_exception(error)
        return future.done()

    def over(self) -> bool:
        """Whether the call this desk serves has ended (or the call it runs inside)."""
        with self._lock:
            if self._closed:
                return True
        return self._outer is not None and self._outer.over()

    def close(self) -> None:
        """The turn moved on: a question waiting, or put from now on, is refused."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, []
        for question in pending:
            question.answer.set_exception(Interrupted("the turn ended"))


_DESK: ContextVar[QuestionDesk | None] = ContextVar("nbagent_question_desk", default=None)


@contextmanager
def answered_here() -> Iterator[QuestionDesk]:
    """Within the block, questions from a thread started in a copy of this context
    (`contextvars.copy_context().run`) are put by this thread, in `QuestionDesk.wait`;
    on the way out any still to come are refused."""
    desk = QuestionDesk(outer=_DESK.get())
    token = _DESK.set(desk)
    try:
        yield desk
    finally:
        _DESK.reset(token)
        desk.close()


def call_over() -> bool:
    """Whether the tool call this thread works for has ended: the thread that waited for it
    moved on (the user interrupted the turn, or the call timed out), so what the call has
    not started yet must not start — no one would see it, and no one could stop it."""
    desk = _DESK.get()
    return desk is not None and desk.over()


def put_question(ask: Callable[[str], str], text: str) -> str:
    """Ask `text` with `ask`: on the thread that waits for this one, if one serves its
    questions, else here."""
    desk = _DESK.get()
    return desk.put(ask, text) if desk is not None else str(ask(text))
