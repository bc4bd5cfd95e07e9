"""The `run_code` tool's policy: whether the model's code runs (the `run_code` setting:
ask, auto, off), the runs of each session (numbered, announced as `CodeRan` for the
archive, turned back into cells with `runs_as_cells`), its figures attached to the round
for a model that reads images (`_images`), and stopping a run whose turn ended — the
kernel's interrupt or the tool's timeout — so nothing keeps running unseen. What runs it
and shows it is the `CodeRunner` (`_code_runner`).
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...engine._events import Event, EventStream, MessageAdded
from ..archive._records import read_records
from ..archive._redact import redact
from ._cells import cell_piece, propose
from ._code_ran import CodeRan
from ._code_runner import CodeResult, code_request, code_runner
from ._context import ToolContext
from ._images import attach_png
from ._tool import HandOver

TOOL_NAME = "run_code"
OFF = ("Not run: running code is off (the user's run_code setting). Use propose_cell to "
       "put the code in a cell for the user to run.")
NO_ONE = ("Not run: the user must approve code before it runs and no one can answer here "
          "(a batch run). Show the code in your reply or use propose_cell instead.")
DECLINED = ("Not run: the user declined to run this code. Ask what they want instead, or "
            "propose different code.")
AS_CELL = ("Not run by you: the user took this code as a new cell below the chat, to edit "
           "and run themselves; when they chat again you will see what the cell printed.")
STOP_WAIT_S = 5.0  # how long a stop waits for the run to end
INTERRUPTED_ASKING = "Not run: the user interrupted while the question waited."
_REFUSED = {"n": DECLINED, "no one": NO_ONE, "interrupted": INTERRUPTED_ASKING}
OUTPUT_RECORD_CHARS = 4_000  # one output's text in the archive record


class CodeRuns:
    """One session's runs: their count and code, and the thread running one now, which a
    turn that ends without it stops."""

    def __init__(self, events: EventStream) -> None:
        self._events = weakref.ref(events)
        self.done: list[CodeRan] = []
        self.before: int | None = None  # runs an archive held before this process's
        self._lock = threading.Lock()
        self._thread: int | None = None  # the thread running code now
        self._idle = threading.Event()
        self._idle.set()

    def __call__(self, event: Event) -> None:
        """A subscriber: a tool result that joins the history while code still runs
        answers the run's own call without it (the turn was interrupted, or the tool timed
        out): the loop runs one call at a time, and a finished run's result joins after it
        ended. So the run is stopped."""
        if isinstance(event, MessageAdded) and event.message.get("role") == "tool":
            self.stop()

    @contextmanager
    def running(self) -> Iterator[None]:
        """While the block runs, `stop` interrupts this thread."""
        with self._lock:
            self._thread = threading.get_ident()
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._thread = None
                self._idle.set()

    def stop(self) -> bool:
        """Raise KeyboardInterrupt in the thread running code, if one is (the runner turns
        it into an interrupted run). Code blocked inside one C call stops when it returns."""
        with self._lock:
            thread = self._thread
        if thread is None:
            return False
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread),
                                                   ctypes.py_object(KeyboardInterrupt))
        # wait a little for the run to show and record how it ended, so the cell (and the
        # turn) ends after it, not before
        self._idle.wait(STOP_WAIT_S)
        return True

    def continue_from(self, archive: Any) -> None:
        """Number on from the runs `archive` already holds (a resumed session), once."""
        if self.before is not None:
            return
        path = getattr(archive, "path", None)
        self.before = 0 if path is None or not Path(path).exists() else sum(
            1 for r in read_records(Path(path)) if r.get("kind") == "code_run")

    def next_label(self) -> str:
        return f"agent run {(self.before or 0) + len(self.done) + 1}"

    def record(self, result: CodeResult) -> CodeRan:
        number = (self.before or 0) + len(self.done) + 1
        ran = CodeRan(number, result.code, result.status, result.text,
                      tuple(_recorded(bundle) for bundle in result.outputs), result.seconds)
        # kept in memory: the code and outcome only (the archive has the outputs)
        self.done.append(replace(ran, text="", outputs=()))
        events = self._events()
        if events is not None:
            events.emit(ran)  # an agent-room event: the archive's table knows it
        return ran


def _recorded(bundle: dict[str, Any]) -> dict[str, Any]:
    """An output as the archive keeps it: its text (bounded) and which kinds it held."""
    text = str(bundle.get("text/plain", ""))[:OUTPUT_RECORD_CHARS]
    return {"text": text, "types": sorted(bundle)}


_runs: weakref.WeakKeyDictionary[EventStream, CodeRuns] = weakref.WeakKeyDictionary()
_runs_lock = threading.Lock()


def code_runs(events: EventStream) -> CodeRuns:
    """The runs of `events`' session (subscribed to it once)."""
    with _runs_lock:
        runs = _runs.get(events)
        if runs is None:
            runs = _runs[events] = CodeRuns(events)
            events.subscribe(runs)
        return runs


def runs_as_cells(events: EventStream) -> str:
    """The code of every run of the session as one cell's source, each run under a
    comment naming it and how it ended (empty when nothing ran)."""
    runs = _runs.get(events)
    pieces = [cell_piece(ran.code, f"agent run {ran.number} ({ran.status})")
              for ran in (runs.done if runs is not None else [])]
    return "\n\n".join(pieces)


def agent_cells(agent: Any) -> str:
    """The code the model ran in `agent`'s session (each run under a comment naming it and
    how it ended), as one cell's source the user can keep: `%nbagent cells` puts it in a
    new cell below. Read from the session's archive when it keeps one (so a resumed
    session has its runs from before the restart too), else from this process's runs.
    Empty when nothing ran."""
    archive = getattr(agent.session, "archive", None)
    path = getattr(archive, "path", None)
    if path is None or not Path(path).exists():
        return runs_as_cells(agent.events)
    runs = [(str(r["code"]), str(r["status"])) for r in read_records(Path(path))
            if r.get("kind") == "code_run"]
    return "\n\n".join(cell_piece(code, f"agent run {number} ({status})")
                       for number, (code, status) in enumerate(runs, 1))


def run_code(context: ToolContext, code: str, explanation: str = "") -> str:
    """Run Python code in the user's notebook namespace, where they see it: the code and
    its outputs (printed text, tables, figures, errors) appear in the chat cell, and you
    get them as text. The user may be asked first, and may take the code as a cell to
    run themselves instead. Keep each run short; assign results to variables to keep them.

    Args:
        code: the code to run, as in a notebook cell (its last expression is shown).
        explanation: one line saying what the code does and why.
    """
    policy = context.settings().run_code
    if policy == "off":
        return OFF
    if not code.strip():
        return "Nothing run: the code is empty."
    runner = code_runner()
    events = context.events
    runs = code_runs(events) if events is not None else None
    if runs is not None:
        runs.continue_from(context.archive())
    label = runs.next_label() if runs is not None else "agent run"
    with runs.running() if runs is not None else _nothing(), ExitStack() as guarded:
        if policy == "ask":  # `auto`: allowed without asking, the setting's standing answer
            try:  # the one question, asked and read by the agent's Approval
                approval = context.approval()
                verdict = runner.ask(code, explanation, label, lambda shown_at: approval.decide(
                    code_request(code, explanation, label, shown_at)))
            except KeyboardInterrupt:  # the turn ended while the question waited
                return INTERRUPTED_ASKING
            if verdict.outcome == "c":
                propose(events, code, explanation)
                raise HandOver(AS_CELL)  # the turn ends: the next step is the user's
            if not verdict.allowed:
                return _REFUSED.get(verdict.outcome, f"Not run: {verdict.reason}.")
        # whatever the run changes of how the user is asked is put back and said (`guard`)
        undone = guarded.enter_context(context.guard(label))
        result = runner.run(code, context.namespace, label, explanation)
        if runs is not None:
            runs.record(result)
        if events is not None:
            attach_figures(events, result, label)
    if undone:  # the run changed how the user is asked: put back, and said where they see it
        runner.tell(undone[0])
        return redact(f"{result.text}\n\n[{undone[0]}]")
    # it goes to the provider: secrets the code printed are redacted as in a variable's
    # description (the notebook shows the user what they would see anyway)
    return redact(result.text)


def attach_figures(events: EventStream, result: CodeResult, label: str) -> int:
    """Attach the run's figures (its `image/png` outputs) to the round, for a model that
    reads images (the loop decides); returns how many were attached."""
    figures = [bundle["image/png"] for bundle in result.outputs if "image/png" in bundle]
    return sum(attach_png(events, data, f"{label}, figure {number} (described in the "
                                        "run's result)")
               for number, data in enumerate(figures, 1))


@contextmanager
def _nothing() -> Iterator[None]:
    yield
