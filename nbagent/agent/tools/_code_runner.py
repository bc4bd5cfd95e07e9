"""The contract between the `run_code` tool and whatever runs the model's code: a
`CodeRunner` asks the user (when the policy says ask) and runs code in a namespace,
returning a `CodeResult` — the bounded text the model reads and the outputs shown. The
`PlainRunner` is the default outside a notebook (it prints nothing and asks on the
terminal); the notebook room installs its own with `use_code_runner`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .._approval import NoOneToAsk, ask_with_input
from ._code_exec import BoundedText, Executed, Status, execute

Answer = Literal["run", "cell", "no"]
Bundle = dict[str, Any]  # a mime bundle as the notebook shows it
DISPLAY_CHARS = 4_000  # one displayed value's text, for the model


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

    `ask` shows `code` and returns the user's answer: "run", "cell" (put it in a cell
    below, unrun) or "no"; None when no one can answer (a batch run). `run` runs it in
    `namespace` under the name `label` ("agent run 3"), shown with the model's one-line
    `explanation`, and never raises for what the code does: an error, the user's
    interrupt or `sys.exit` is the result's `status`."""

    def ask(self, code: str, explanation: str, label: str) -> Answer | None: ...

    def run(self, code: str, namespace: dict[str, Any], label: str,
            explanation: str = "") -> CodeResult: ...


def answer_of(typed: str) -> Answer:
    """What the user typed at the question: empty or y/yes/run runs it; c/cell takes it
    as a cell; anything else is no (a careful default)."""
    word = typed.strip().lower()
    if word in ("", "y", "yes", "r", "run"):
        return "run"
    if word in ("c", "cell"):
        return "cell"
    return "no"


QUESTION = "Run it? [Enter/y] run · [c] put it in a cell below · [n] don't run: "


def ask_on_stdin(prompt: str = QUESTION) -> Answer | None:
    """Ask the way outside tools are asked (`ask_with_input`: in a kernel, the front end's
    input box); None when no one can answer (a batch run, no terminal). The user's
    interrupt while it waits is raised: the turn is over, nothing runs."""
    try:
        return answer_of(ask_with_input(prompt))
    except NoOneToAsk:
        return None
    except Exception:  # a broken front end is no answer, never a crash
        return None


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
    captured (bounded), asks on stdin. Shows nothing itself."""

    def ask(self, code: str, explanation: str, label: str) -> Answer | None:
        header = f"# {explanation}\n" if explanation.strip() else ""
        return ask_on_stdin(f"The model wants to run ({label}):\n{header}{code}\n{QUESTION}")

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


def code_runner() -> CodeRunner:
    """The runner in use."""
    return _runner if _runner is not None else PlainRunner()
