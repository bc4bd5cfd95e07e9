"""The contract between the `run_code` tool and whatever runs the model's code: a
`CodeRunner` shows the code where the user sees it while the one approval mechanism asks
(`ask`: the question and its answers are `Approval`'s), runs code in a namespace and
returns a `CodeResult` — the bounded text the model reads and the outputs shown. The
`PlainRunner` is the default outside a notebook (it prints nothing itself; the question
shows the code on the terminal); the notebook room installs its own with `use_code_runner`.
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...engine._exceptions import NbagentWarning
from .._approval import CODE_ANSWERS, CODE_SCOPE, ApprovalRequest, Verdict
from ._code_exec import BoundedText, Executed, Status, execute

Bundle = dict[str, Any]  # a mime bundle as the notebook shows it
DISPLAY_CHARS = 4_000  # one displayed value's text, for the model
Decide = Callable[[str], Verdict]  # where the code is shown whole -> the verdict


@dataclass
class CodeResult:
    """One run: its code, how it ended, the text the model reads (bounded), the outputs
    as shown (mime bundles, in order) and how long it took."""

    code: str
    status: Status
    text: str
    outputs: list[Bundle] = field(default_factory=list)
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


def text_form(label: str, executed: Executed, printed: BoundedText, shown: list[str],
              seconds: float) -> str:
    """The bounded text the model reads for one run: how it ended, what it printed (head
    and tail), each displayed value's text (DataFrames as text tables, figures as a
    description) and the traceback. The tool's cap bounds the whole on arrival."""
    outcome = {"ok": f"ran in {seconds:.1f} s",
               "error": f"raised {executed.error_name} after {seconds:.1f} s",
               "interrupted": f"was interrupted by the user after {seconds:.1f} s",
               "exited": f"called sys.exit after {seconds:.1f} s (only the run ended)"}
    parts = [f"[{label} {outcome[executed.status]}; the user saw the code and its outputs "
             "in the notebook]"]
    if printed.total:
        parts.append(f"printed ({printed.total:,} characters):\n{printed.text()}")
    for number, text in enumerate(shown, 1):
        if len(text) > DISPLAY_CHARS:
            text = f"{text[:DISPLAY_CHARS]}\n[… {len(text) - DISPLAY_CHARS:,} characters cut]"
        parts.append(f"output {number}:\n{text}")
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
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            executed = execute(code, namespace, f"<{label}>")
        shown = [_repr(executed.value)] if executed.has_value else []
        seconds = time.monotonic() - started
        outputs: list[Bundle] = [{"text/plain": text} for text in shown]
        return CodeResult(code, executed.status,
                          text_form(label, executed, printed, shown, seconds), outputs, seconds)


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
