"""The contract between the `run_code` tool and whatever runs the model's code: a
`CodeRunner` shows the code where the user sees it while the one approval mechanism asks
(`ask`: the question and its answers are `Approval`'s), runs code in a namespace and
returns a `CodeResult` — the bounded text the model reads and the outputs shown. The
`PlainRunner` is the default outside a notebook (it prints nothing itself; the question
shows the code on the terminal); the notebook room installs its own with `use_code_runner`.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...engine._exceptions import NbagentWarning
from .._approval import CODE_ANSWERS, CODE_SCOPE, ApprovalRequest, Verdict
from ._code_exec import BoundedText, Displayed, Executed, Shown, Status, execute
from ._code_scope import contained

Bundle = dict[str, Any]  # a mime bundle as the notebook shows it
Decide = Callable[[str], Verdict]  # where the code is shown whole -> the verdict


@dataclass
class CodeResult:
    """One run: its code, how it ended, the text the model reads (bounded), the outputs it
    displayed as kept (`Displayed`: bounded, in order; numbers jump where some were
    dropped) and how long it took."""

    code: str
    status: Status
    text: str
    outputs: list[Shown] = field(default_factory=list)
    seconds: float = 0.0


class CodeRunner(Protocol):
    """Runs the model's code where the user can see it.

    `ask` shows `code` (with the model's one-line `explanation`, as run `label`) where the
    user sees it and returns `decide(shown_at)`: the one question, asked and read by the
    agent's `Approval` (`shown_at` says where the code is shown whole, "" for in the
    question itself); then it says there what became of the code
    (`outcome_note(verdict.outcome)`). `run` runs it in `namespace` under the name `label`
    ("agent run 3") and never raises for what the code does: an error, the user's
    interrupt or `sys.exit` is the result's `status`. `tell` shows one line of nbagent's
    about the run."""

    def ask(self, code: str, explanation: str, label: str, decide: Decide) -> Verdict: ...

    def run(self, code: str, namespace: dict[str, Any], label: str,
            explanation: str = "") -> CodeResult: ...

    def tell(self, text: str) -> None: ...


def code_request(code: str, explanation: str, label: str, shown_at: str = "") -> ApprovalRequest:
    """The approval request for one run of the model's code: the code whole, its label and
    the model's explanation, the code scope (answer `a`: all code in this session)."""
    said = " ".join(explanation.split())
    return ApprovalRequest(action="run", subject="this code",
                           source=f"{label}: {said}" if said else label, details=code,
                           scopes=(CODE_SCOPE,), answers=CODE_ANSWERS, shown_at=shown_at)


def text_form(label: str, executed: Executed, printed: BoundedText,
              shown: Displayed | Sequence[str], seconds: float, *,
              seen: str | None = "notebook") -> str:
    """The bounded text the model reads for one run: how it ended, where the user saw it
    (`seen`: "notebook", "terminal"; None: the user was shown neither the code's outputs nor
    its run), what it printed (head and tail), each displayed output's text (DataFrames as
    text tables, figures as a description; head and tail of them) and the traceback. The
    tool's cap bounds the whole on arrival."""
    outcome = {"ok": f"ran in {seconds:.1f} s",
               "error": f"raised {executed.error_name} after {seconds:.1f} s",
               "interrupted": f"was interrupted by the user after {seconds:.1f} s",
               "exited": f"called sys.exit after {seconds:.1f} s (only the run ended)",
               "not run": "was not run: the turn ended before its code started"}
    where = (f"the user saw the code and its outputs in the {seen}" if seen else
             "the user was not shown its outputs")
    if executed.status == "not run":  # nothing ran, nothing to read
        return f"[{label} {outcome[executed.status]}]"
    parts = [f"[{label} {outcome[executed.status]}; {where}]"]
    if printed.total:
        parts.append(f"printed ({printed.total:,} characters):\n{printed.text()}")
    if not isinstance(shown, Displayed):
        listed, shown = shown, Displayed()
        for text in listed:
            shown.add(text, ())
    previous = 0
    for each in shown.kept():
        if each.number > previous + 1:
            parts.append(f"[… {each.number - previous - 1:,} outputs not kept …]")
        parts.append(f"output {each.number}:\n{each.text}")
        previous = each.number
    if executed.error:
        parts.append(executed.error)
    if len(parts) == 1:
        parts.append("(no output)")
    return "\n\n".join(parts)


class PlainRunner:
    """The default runner outside a notebook: runs in the namespace with what it prints
    captured (bounded). Shows nothing itself: the question shows the code whole on the
    terminal, and a line of nbagent's is a warning."""

    def ask(self, code: str, explanation: str, label: str, decide: Decide) -> Verdict:
        return decide("")  # the question shows the code

    def tell(self, text: str) -> None:
        warnings.warn(text, NbagentWarning, stacklevel=2)

    def run(self, code: str, namespace: dict[str, Any], label: str,
            explanation: str = "") -> CodeResult:
        printed = BoundedText()
        started = time.monotonic()
        with contained(printed):  # this thread's printing only, never the process's
            executed = execute(code, namespace, f"<{label}>")
        shown = Displayed()
        if executed.has_value:
            shown.add(_repr(executed.value), ("text/plain",))
        seconds = time.monotonic() - started
        return CodeResult(code, executed.status,
                          text_form(label, executed, printed, shown, seconds, seen=None),
                          shown.kept(), seconds)


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as error:
        return f"(a {type(value).__name__} whose repr raised {type(error).__name__})"


_runner: CodeRunner | None = None
_runner_lock = threading.Lock()


def use_code_runner(runner: CodeRunner | None) -> CodeRunner | None:
    """Run the model's code with `runner` from now on (None: the plain default); returns
    the one it replaces. `%load_ext nbagent` installs the notebook's."""
    global _runner
    with _runner_lock:
        previous, _runner = _runner, runner
    return previous


def installed_runner() -> CodeRunner | None:
    """The runner `use_code_runner` installed (None: the plain default)."""
    return _runner


def code_runner() -> CodeRunner:
    """The runner in use."""
    return _runner if _runner is not None else PlainRunner()
