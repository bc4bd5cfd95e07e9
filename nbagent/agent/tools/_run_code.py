"""The `run_code` tool's policy: whether the model's code runs (the `run_code` setting:
ask, auto, off), the runs of each session (numbered once each, written to the archive
before they start — `CodeStarting` — and when they end — `CodeRan` —, turned back into
cells with `agent_cells`), its figures attached to the round for a model that reads images
(`_images`), and stopping a run whose turn ended — the kernel's interrupt or the tool's
timeout — or, when it will not stop, cutting it loose (`_code_scope.detach`), so nothing
it does reaches the user's later outputs. What runs it and shows it is the `CodeRunner`
(`_code_runner`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...engine._events import Event, EventStream, MessageAdded
from .._approval import outcome_note
from .._asking import call_over
from ..archive._records import read_records
from ..archive._redact import redact
from . import _code_stop
from ._cells import cell_piece, propose
from ._code_ran import DETACHED, NEVER_ENDED, NOT_RUN, CodeRan, CodeStarting
from ._code_runner import CodeResult, code_request, code_runner
from ._code_scope import detach
from ._context import ToolContext
from ._images import attach_png
from ._per_session import PerSession
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
NOT_STARTED = "Not run: the turn ended before the code started."
_REFUSED = {"n": DECLINED, "no one": NO_ONE, "interrupted": INTERRUPTED_ASKING}


class CodeRuns:
    """One session's runs: their numbers (each taken once, by a run shown to the user
    whether or not it ran) and outcomes, and the run going on now, which a turn that ends
    without it stops — and, if it will not stop, cuts loose (`_code_scope.detach`)."""

    def __init__(self, events: EventStream) -> None:
        self._events = weakref.ref(events)
        self.done: list[CodeRan] = []  # outcomes, in the order they came (code and status)
        self.before: int | None = None  # the highest number an archive held before this process's
        self.taken = 0  # numbers taken in this process
        self._lock = threading.Lock()
        self._thread: int | None = None  # the thread running code now
        self._current: tuple[int, str] | None = None  # (number, code) of the run going on
        self._idle = threading.Event()
        self._idle.set()

    def __call__(self, event: Event) -> None:
        """A subscriber: a tool result that joins the history while code still runs
        answers the run's own call without it (the turn was interrupted, or the tool timed
        out): the loop runs one call at a time, and a finished run's result joins after it
        ended. So the run is stopped."""
        if isinstance(event, MessageAdded) and event.message.get("role") == "tool":
            self.stop()

    def take_number(self) -> int:
        """The next run's number, taken once, as the run is first shown (`Run.shown`): a
        run declined, taken as a cell or interrupted at the question keeps its number, so
        no two runs share a label; one never shown takes none, so none is skipped."""
        with self._lock:
            self.taken += 1
            return (self.before or 0) + self.taken

    def next_label(self) -> str:
        """The label of a new run (its number taken)."""
        return f"agent run {self.take_number()}"

    @contextmanager
    def running(self, code: str = "") -> Iterator[Run]:
        """While the block runs, `stop` stops this thread's run — in its code only
        (`_code_stop`): outside it the stop is noted and the code never starts. A run
        shown (numbered) that the block neither started nor finished is recorded as not
        run; one it started and did not finish (an error of ours) as interrupted."""
        run = Run(self, code)
        with _code_stop.guarded(call_over):  # guarded first: a stop that sees the thread
            with self._lock:                 # always finds its guard
                self._thread = threading.get_ident()
                self._idle.clear()
            outcome = len(self.done)
            try:
                yield run
            finally:
                with self._lock:
                    started, self._current = self._current, None
                    self._thread = None
                number = run.number
                if number is not None and not any(r.number == number
                                                  for r in self.done[outcome:]):
                    self._emit(number, code, "interrupted" if started is not None else NOT_RUN)
                self._idle.set()

    def starting(self, number: int, code: str) -> None:
        """Run `number` is about to start: written to the archive (on disk) first."""
        with self._lock:
            self._current = (number, code)
        events = self._events()
        if events is not None:
            events.emit(CodeStarting(number, code))

    def not_started(self) -> None:
        """The run `starting` announced never ran its code (stopped first): when its block
        ends it is recorded as not run, not as interrupted."""
        with self._lock:
            self._current = None

    def stop(self) -> bool:
        """Stop the run going on, if one is: KeyboardInterrupt raised in its code if the
        code runs (the runner turns it into an interrupted run), else noted so the code
        never starts (`_code_stop`); then wait a little for it to end. A run still going
        then (it caught the interrupt, or sits in one C call) is detached: nothing it
        prints or displays is shown from then on, the runner says it is still running,
        and its `detached` outcome is recorded (its real one follows if it ever ends)."""
        with self._lock:
            thread, current = self._thread, self._current
        if thread is None:
            return False
        _code_stop.stop(thread)
        # wait a little for the run to show and record how it ended, so the cell (and the
        # turn) ends after it, not before
        if not self._idle.wait(STOP_WAIT_S) and detach(thread) is not None and current:
            self._emit(*current, DETACHED, seconds=STOP_WAIT_S, detached=True)
        return True

    def continue_from(self, archive: Any) -> None:
        """Number on from the runs `archive` already holds (a resumed session), once."""
        if self.before is not None:
            return
        path = getattr(archive, "path", None)
        self.before = 0 if path is None or not Path(path).exists() else max(
            (int(r["number"]) for r in read_records(Path(path))
             if r.get("kind") in _RUN_KINDS and isinstance(r.get("number"), int)), default=0)

    def record(self, result: CodeResult, number: int | None = None) -> CodeRan:
        """Run `number`'s outcome (the next number when none was taken: a direct call);
        marked detached when it was cut loose before it ended."""
        number = self.take_number() if number is None else number
        detached = any(r.number == number and r.status == DETACHED for r in self.done)
        return self._emit(number, result.code, result.status, result.text, tuple(
            {"number": each.number, "types": list(each.types)} for each in result.outputs),
            result.seconds, detached)

    def _emit(self, number: int, code: str, status: str, text: str = "",
              outputs: tuple[dict[str, Any], ...] = (), seconds: float = 0.0,
              detached: bool = False) -> CodeRan:
        ran = CodeRan(number, code, status, text, outputs, seconds, detached)
        # kept in memory: the code and outcome only (the archive has the rest)
        self.done.append(replace(ran, text="", outputs=()))
        events = self._events()
        if events is not None:
            events.emit(ran)  # an agent-room event: the archive's table knows it
        return ran


@dataclass
class Run:
    """One call's run: numbered when it is first shown (`shown`), never before — a run the
    turn left before anything of it was shown takes no number and leaves no record."""

    runs: CodeRuns | None
    code: str
    number: int | None = None

    def shown(self) -> str:
        """The run's label, its number taken now (once): the caller shows it next."""
        if self.runs is None:
            return "agent run"
        if self.number is None:
            self.number = self.runs.take_number()
        return f"agent run {self.number}"


_RUN_KINDS = ("code_start", "code_run")
code_runs = PerSession(CodeRuns)  # the runs of a session (subscribed to it once)


def _as_cells(runs: list[tuple[int, str, str, bool]]) -> str:
    """(number, code, status, detached) in order as one cell's source: each run that ran
    under a comment naming it and how it ended; numbers shown and not run are left out."""
    latest: dict[int, tuple[str, str, bool]] = {}
    for number, code, status, detached in runs:
        before = latest.get(number)
        latest[number] = (code, status, detached or (before is not None and before[2]))
    pieces = []
    for number, (code, status, detached) in latest.items():
        if status == NOT_RUN:
            continue
        how = {NEVER_ENDED: "never ended: the kernel stopped or restarted during it",
               DETACHED: "detached: still running when it was asked to stop"}.get(status, status)
        if detached and status != DETACHED:
            how = f"detached, then {how}"
        pieces.append(cell_piece(code, f"agent run {number} ({how})"))
    return "\n\n".join(pieces)


def runs_as_cells(events: EventStream) -> str:
    """The code of every run of the session as one cell's source, each run under a
    comment naming it and how it ended (empty when nothing ran)."""
    runs = code_runs.get(events)
    done = runs.done if runs is not None else []
    return _as_cells([(r.number, r.code, r.status, r.detached) for r in done])


def agent_cells(agent: Any) -> str:
    """The code the model ran in `agent`'s session (each run under a comment naming it and
    how it ended), as one cell's source the user can keep: `%nbagent cells` puts it in a
    new cell below. Read from the session's archive when it keeps one (so a resumed
    session has its runs from before the restart too, and a run that ended the process
    is there, marked), else from this process's runs. Empty when nothing ran."""
    archive = getattr(agent.session, "archive", None)
    path = getattr(archive, "path", None)
    if path is None or not Path(path).exists():
        return runs_as_cells(agent.events)
    runs: list[tuple[int, str, str, bool]] = []
    for record in read_records(Path(path)):
        if record.get("kind") not in _RUN_KINDS:
            continue
        number = record.get("number")
        number = number if isinstance(number, int) else len(runs) + 1  # an older record
        status = NEVER_ENDED if record["kind"] == "code_start" else str(record["status"])
        runs.append((number, str(record["code"]), status, bool(record.get("detached"))))
    return _as_cells(runs)


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
    with runs.running(code) if runs is not None else _unnumbered(code) as run, \
            ExitStack() as guarded:
        if _code_stop.stopped():  # the turn ended first (the user's interrupt, the tool's
            return NOT_STARTED  # timeout): nothing shown yet, so nothing numbered either
        label = run.shown()  # numbered here: what follows shows it, whatever then happens
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
        try:
            if runs is not None and run.number is not None:
                runs.starting(run.number, code)  # on disk before it runs: it may end the process
            # whatever the run changes of how the user is asked is put back and said (`guard`)
            undone = guarded.enter_context(context.guard(label))
        except BaseException as error:  # noqa: B036 -- the archive or the guard failed (a
            if runs is not None:              # hook's error or interrupt): it never ran
                runs.not_started()
            why = (outcome_note("interrupted") if isinstance(error, KeyboardInterrupt) else
                   f"not run: {type(error).__name__} before it started")
            runner.tell(f"{label} · {why}")
            raise
        # a stop that came after the run was shown (the turn ended after the user allowed
        # it, or as it was announced) is noted, not raised: the runner shows the run, which
        # does not start, and redraws its header to say "not run" (`_code_stop`)
        result = runner.run(code, context.namespace, label, explanation)
        if runs is not None:
            runs.record(result, run.number)
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
    figures = [each.png for each in result.outputs if each.png is not None]
    return sum(attach_png(events, data, f"{label}, figure {number} (described in the "
                                        "run's result)")
               for number, data in enumerate(figures, 1))


@contextmanager
def _unnumbered(code: str) -> Iterator[Run]:
    """A run with no session to number it (no event stream): stopped only by its call's
    end."""
    with _code_stop.guarded(call_over):
        yield Run(None, code)
