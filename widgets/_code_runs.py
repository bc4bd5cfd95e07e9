"""Code the model runs, in the chat cell: `NotebookRunner` shows the code (and, under the
`ask` policy, waits for the user's answer in the front end's input box), runs it in the
user's namespace and shows its outputs as the notebook does — printed text (one output,
head and tail, updated in place while it runs), displayed values (DataFrame tables),
figures (the inline backend's PNG), errors with their traceback — as ordinary outputs with
display ids, so a saved notebook keeps them; everything it displays made inert on its way
out (`_displayed`), what it prints routed from its own thread only (`contained`), and a
run cut loose when it will not stop said to be still running. The model gets the bounded
text form. Where
outputs cannot be redrawn (a terminal, a console: `_frontend.updates_in_place`) each thing
is printed once, and every text/plain shown is control-free (`_bundles.terminal_text`).
"""

from __future__ import annotations

import contextlib
import html
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from IPython.display import display

from nbagent.approval import Verdict, outcome_note
from nbagent.code import (
    BoundedText,
    CodeResult,
    Displayed,
    Executed,
    contained,
    describe_figure,
    execute,
    text_form,
)
from nbagent.text import hidden_in, visible

from ._bundles import Bundle, plain_line, terminal_text
from ._cells import offer_cell
from ._displayed import Recorder, inert_output, text_of
from ._frontend import updates_in_place
from ._texts import notebook_words

REDRAW_EVERY_S = 0.25  # printed text is redrawn at most this often while the code runs
SHOWN_AT = "above"  # where the question says the code is shown whole: in the chat cell
_OUTCOME = {"ok": "ran in {s:.1f} s", "error": "raised an error after {s:.1f} s",
            "interrupted": "interrupted after {s:.1f} s", "exited": "called sys.exit after "
            "{s:.1f} s (only the run ended)", "not run": outcome_note("interrupted")}
DETACHED = ("still running: it did not stop when asked, so it was cut loose — nothing it "
            "prints or shows from now on appears")


def hidden_line(text: str) -> str:
    """The flag under a header when the code or explanation holds hidden characters."""
    names = hidden_in(text)
    return f"⚠ hidden characters, shown as ⟨U+…⟩: {', '.join(names)}" if names else ""


def code_bundle(code: str, explanation: str, label: str, note: str) -> Bundle:
    """The code as the chat cell shows it, exactly as it will run: a header line (which
    run, what happened), a flag naming any hidden characters, and the code highlighted as
    Python, whole, with every control, invisible or bidi character written `⟨U+XXXX⟩`
    where it stands (`nbagent.text.visible`: never drawn, never dropped; a lone CR breaks
    the line as Python reads it). The model's explanation is a comment inside the fence,
    so nothing the model wrote is rendered as Markdown."""
    code, explanation = code.strip("\n"), " ".join(explanation.split())
    flag = hidden_line(f"{explanation}\n{code}")
    body = visible(f"# {explanation}\n{code}" if explanation else code)
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", body)), default=0))
    flagged = f"**{flag}**\n\n" if flag else ""
    return {"text/markdown": f"*{label} · {note}*\n\n{flagged}{fence}python\n{body}\n{fence}\n",
            "text/plain": "\n".join(p for p in (f"{label} · {note}", flag, body) if p)}


def error_bundle(text: str) -> Bundle:
    """A traceback as the notebook shows an error: monospace, on the error colours."""
    return {"text/plain": terminal_text(text),
            "text/html": '<pre class="nbagent-run-error" style="background:var('
                         '--jp-rendermime-error-background,#fdd);color:var('
                         '--jp-content-font-color1,#1a1a1a);padding:4px 8px;margin:0;'
                         f'white-space:pre-wrap">{html.escape(terminal_text(text))}</pre>'}


class _CodeHeader:
    """The code's output, whose note says what happened to it: redrawn in place where the
    front end can; elsewhere the code is printed once and each later note is a line of
    its own (reprinting the code at every change would show it three times)."""

    def __init__(self, code: str, explanation: str, label: str, note: str,
                 in_place: bool) -> None:
        self.code, self.explanation, self.label = code, explanation, label
        self.in_place = in_place
        self._handle = display(code_bundle(code, explanation, label, note), raw=True,
                               display_id=in_place or None)

    def update(self, note: str) -> None:
        if self.in_place:
            self._handle.update(code_bundle(self.code, self.explanation, self.label, note),
                                raw=True)
        else:
            display(plain_line("nbagent-run-note", f"{self.label} · {note}"), raw=True)


class _LivePrinted(BoundedText):
    """What the code prints, bounded, shown as one output redrawn in place (or, where
    outputs cannot be redrawn, once at the end); never a control sequence of its own."""

    def __init__(self, live: bool = True) -> None:
        super().__init__()
        self._live = live  # redrawn while it runs (a kernel), or shown once at the end
        self._handle: Any = None
        self._drawn_at = 0.0
        self._outside = sys.stdout  # where a terminal shell prints our own displays
        self.drawing = False  # our own display is being printed (a terminal shell's)

    def write(self, text: str) -> int:
        if self.drawing:  # a terminal shell printing a display: not the code's printing
            return int(self._outside.write(text) or 0)
        written = super().write(text)
        now = time.monotonic()
        if self._live and (self._handle is None or now - self._drawn_at >= REDRAW_EVERY_S):
            self.draw(now)
        return written

    @contextlib.contextmanager
    def passing(self) -> Iterator[None]:
        """While the block runs, what this thread prints goes out as it is (a display
        a terminal shell prints), not into the code's printed text."""
        before, self.drawing = self.drawing, True
        try:
            yield
        finally:
            self.drawing = before

    def draw(self, now: float | None = None) -> None:
        if not self.total:
            return
        bundle = {"text/plain": terminal_text(self.text())}
        self._drawn_at = time.monotonic() if now is None else now
        with self.passing():
            if self._handle is None:
                self._handle = display(bundle, raw=True, display_id=True)
            else:
                self._handle.update(bundle, raw=True)


class NotebookRunner:
    """Runs the model's code in the kernel, shown in the chat cell being run."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._asked: dict[str, _CodeHeader] = {}  # label -> the code shown by `ask`

    def ask(self, code: str, explanation: str, label: str,
            decide: Callable[[str], Verdict]) -> Verdict:
        """Show the code in the chat cell, then the one question (the agent's `Approval`)
        in the front end's input box, pointing up at it; the header then says what
        became of the code."""
        header: _CodeHeader | None
        try:
            header = _CodeHeader(code, explanation, label, "waiting for your answer below",
                                 updates_in_place(self.shell))
        except Exception:  # a display hook failed: the code is not shown above, so the
            header = None  # question shows it whole itself
        try:
            verdict = decide(SHOWN_AT if header is not None else "")
        except KeyboardInterrupt:  # interrupted while it waited: say so, nothing runs
            _redraw(header, outcome_note("interrupted"))
            raise
        _redraw(header, outcome_note(verdict.outcome))
        if verdict.allowed and header is not None:
            self._asked[label] = header  # run() updates the same output
        return verdict

    def tell(self, text: str) -> None:
        """One line of nbagent's about a run, under it."""
        display(plain_line("nbagent-run-note", notebook_words(text)), raw=True)

    def run(self, code: str, namespace: dict[str, Any], label: str,
            explanation: str = "") -> CodeResult:
        in_place = updates_in_place(self.shell)
        header = self._asked.pop(label, None)
        # a terminal or a console prints each display anew: there the printed text is
        # shown once, at the end
        printed = _LivePrinted(live=in_place)
        shown = Displayed()
        seen = "notebook" if in_place else "terminal"
        executed: Executed | None = None
        started = time.monotonic()
        try:  # whatever stops the showing (a display hook's error, an interrupt raised in
            # it), the header ends saying what became of the code, and the result agrees
            if header is None:
                header = _CodeHeader(code, explanation, label, "running…", in_place)
            before = _figure_numbers()
            started = time.monotonic()
            # what this thread prints goes to `printed` (no other thread's: the user's cells
            # print where they always do), and all it displays is made inert on its way out
            with contained(printed) as scope, Recorder(self.shell, shown, printed, scope):
                scope.on_detach(lambda: _said_detached(header, printed))
                executed = execute(code, namespace, f"<{label}>")
            seconds = time.monotonic() - started
            if scope.detached:  # it ended after it was cut loose: nothing more is shown
                for figure in _new_figures(before):
                    _close(figure)
                return CodeResult(code, executed.status, text_form(
                    label, executed, printed, shown, seconds, seen=seen), shown.kept(), seconds)
            if executed.status == "not run":  # asked to stop before its code started
                header.update(_OUTCOME[executed.status])
                return CodeResult(code, executed.status, text_form(
                    label, executed, printed, shown, 0.0, seen=seen), [], 0.0)
            printed.draw()
            # the value and the figures are shown after the routing: a terminal shell prints
            # a display to stdout, which would land in the printed text (twice to the model)
            if executed.has_value:
                self._show(executed.value, shown)
            for figure in _new_figures(before):
                self._show(figure, shown, describe_figure(figure))
            if executed.error:
                display(error_bundle(executed.error), raw=True)
            header.update(_OUTCOME[executed.status].format(s=seconds))
        except BaseException as error:  # noqa: B036 -- ours failed, not the code
            return _cut_short(header, error, code, label, executed, printed, shown,
                              time.monotonic() - started, seen)
        return CodeResult(code, executed.status, text_form(
            label, executed, printed, shown, seconds, seen=seen), shown.kept(), seconds)

    def _show(self, value: Any, shown: Displayed, described: str | None = None) -> None:
        """Display `value` as the notebook would (its richest form, made inert) and keep
        its text: a figure's description, else its text/plain (a DataFrame's text table)."""
        try:
            data, metadata = self.shell.display_formatter.format(value)
        except Exception as error:  # a value that cannot be shown ends nothing
            data, metadata = {"text/plain": f"(a {type(value).__name__} that cannot be "
                                            f"shown: {type(error).__name__})"}, {}
        if not data:
            return
        data, metadata = inert_output(data, metadata)
        display(data, metadata=metadata, raw=True)
        shown.add(described or text_of(data), data, data.get("image/png"))
        if described is not None:
            _close(value)


def _redraw(header: _CodeHeader | None, note: str) -> None:
    """Say `note` on the header, if it was drawn; a display that fails here changes
    nothing of the run (its runner redraws the header again when the run ends)."""
    if header is None:
        return
    try:
        header.update(note)
    except Exception:  # the display hook's failure, not the run's
        pass


def _cut_short(header: _CodeHeader | None, error: BaseException, code: str, label: str,
               executed: Executed | None, printed: _LivePrinted, shown: Displayed,
               seconds: float, seen: str) -> CodeResult:
    """The run's showing was cut short by `error` (a display hook's, an interrupt raised
    in it): before its code ran, the run did not run; after, it ended as it ended and
    not all of it was shown. The header is redrawn to say so (drawn, if it never was)."""
    why = ("interrupted" if isinstance(error, KeyboardInterrupt) else
           f"showing it failed ({type(error).__name__})")
    if executed is None:
        executed, seconds, note = Executed("not run", error_name=type(error).__name__), 0.0, (
            outcome_note("interrupted") if why == "interrupted" else f"not run: {why}")
    else:
        note = f"{_OUTCOME[executed.status].format(s=seconds)} · not all shown: {why}"
    try:
        if header is None:  # its first drawing is what failed: once more, not in place
            _CodeHeader(code, "", label, note, False)
        else:
            header.update(note)
    except BaseException:  # noqa: B036,S110 -- the display itself is what fails: the
        pass               # result still says how the run ended
    return CodeResult(code, executed.status, text_form(label, executed, printed, shown,
                                                       seconds, seen=seen), shown.kept(), seconds)


def _said_detached(header: _CodeHeader, printed: _LivePrinted) -> None:
    """A run asked to stop goes on (it caught the interrupt, or sits in one C call): what
    it printed until now is shown, and its header says it was cut loose."""
    printed.draw()
    header.update(DETACHED)


def _figure_numbers() -> set[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def _new_figures(before: set[int]) -> list[Any]:
    """The figures the run made and did not show or close (the inline backend would show
    them at the end of the cell, out of place: shown here instead, then closed)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    return [pyplot.figure(n) for n in pyplot.get_fignums() if n not in before]


def _close(figure: Any) -> None:
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(figure)


def offer_cells(shell: Any, agent: Any) -> str:
    """Put the code every run of `agent`'s session ran into a new cell below (the kernel
    adds one cell per execution, so the runs go into one, each under its own comment);
    returns a line saying what happened."""
    from nbagent.code import agent_cells

    source = agent_cells(agent)
    if not source:
        return "nbagent: the model has run no code in this session"
    runs = source.count("# agent run ")
    if not offer_cell(shell, source, f"the code of {runs} run(s)"):
        return f"nbagent: the code of {runs} run(s) is shown above, to copy"
    return f"nbagent: the code of {runs} run(s) is in a new cell below, to keep"
