"""The contract between the `run_code` tool and whatever runs the model's code: a
`CodeRunner` asks the user (when the policy says ask) and runs code in a namespace,
returning a `CodeResult` — the bounded text the model reads and the outputs shown. The
`PlainRunner` is the default outside a notebook (it prints nothing and asks on the
terminal); the notebook room installs its own with `use_code_runner`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .._approval import NoOneToAsk, ask_with_input
from ._code_exec import BoundedText, Displayed, Executed, Shown, Status, execute
from ._code_scope import contained

Answer = Literal["run", "cell", "no"]
Bundle = dict[str, Any]  # a mime bundle as the notebook shows it


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
               "exited": f"called sys.exit after {seconds:.1f} s (only the run ended)"}
    where = (f"the user saw the code and its outputs in the {seen}" if seen else
             "the user was not shown its outputs")
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
    captured (bounded), asks on stdin. Shows nothing itself."""

    def ask(self, code: str, explanation: str, label: str) -> Answer | None:
        header = f"# {explanation}\n" if explanation.strip() else ""
        return ask_on_stdin(f"The model wants to run ({label}):\n{header}{code}\n{QUESTION}")

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


def code_runner() -> CodeRunner:
    """The runner in use."""
    return _runner if _runner is not None else PlainRunner()
