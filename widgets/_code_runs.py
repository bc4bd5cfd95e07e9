"""Code the model runs, in the chat cell: `NotebookRunner` shows the code (and, under the
`ask` policy, waits for the user's answer in the front end's input box), runs it in the
user's namespace and shows its outputs as the notebook does — printed text (one output,
head and tail, updated in place while it runs), displayed values (DataFrame tables),
figures (the inline backend's PNG), errors with their traceback — as ordinary outputs with
display ids, so a saved notebook keeps them. The model gets the bounded text form. Where
outputs cannot be redrawn (a terminal, a console: `_frontend.updates_in_place`) each thing
is printed once, and every text/plain shown is control-free (`_bundles.terminal_text`).
"""

from __future__ import annotations

import contextlib
import html
import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from IPython.display import display

from nbagent.code import (
    Answer,
    BoundedText,
    CodeResult,
    Displayed,
    ask_on_stdin,
    contained,
    describe_figure,
    execute,
    text_form,
)

from ._bundles import Bundle, plain_line, terminal_text
from ._displayed import html_text, inert_output
from ._frontend import updates_in_place

REDRAW_EVERY_S = 0.25  # printed text is redrawn at most this often while the code runs
_NOTES = {"run": "running…", "cell": "not run: it is in a new cell below, for you to run",
          "no": "not run: you declined", None: "not run: no one can answer here (a batch run)"}
_OUTCOME = {"ok": "ran in {s:.1f} s", "error": "raised an error after {s:.1f} s",
            "interrupted": "interrupted after {s:.1f} s", "exited": "called sys.exit after "
            "{s:.1f} s (only the run ended)"}
DETACHED = ("still running: it did not stop when asked, so it was cut loose — nothing it "
            "prints or shows from now on appears")
Data = dict[str, Any]  # a mime bundle or its metadata, as a run displays it


def code_bundle(code: str, explanation: str, label: str, note: str) -> Bundle:
    """The code as the chat cell shows it: a header line (which run, what happened) and
    the code highlighted as Python; the model's explanation is a comment inside the
    fence, so nothing the model wrote is rendered as Markdown."""
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", code)), default=0))
    comment = "".join(f"# {line}\n" for line in explanation.strip().splitlines())
    body = f"{comment}{code.strip(chr(10))}"
    return {"text/markdown": f"*{label} · {note}*\n\n{fence}python\n{body}\n{fence}\n",
            "text/plain": terminal_text(f"{label} · {note}\n{body}")}


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

    def ask(self, code: str, explanation: str, label: str) -> Answer | None:
        header = _CodeHeader(code, explanation, label, "waiting for your answer below",
                             updates_in_place(self.shell))
        try:
            answer = ask_on_stdin()
        except KeyboardInterrupt:  # interrupted while it waited: say so, nothing runs
            header.update("not run: interrupted")
            raise
        header.update(_NOTES[answer])
        if answer == "run":
            self._asked[label] = header  # run() updates the same output
        return answer

    def run(self, code: str, namespace: dict[str, Any], label: str,
            explanation: str = "") -> CodeResult:
        in_place = updates_in_place(self.shell)
        header = self._asked.pop(label, None) or _CodeHeader(code, explanation, label,
                                                             "running…", in_place)
        # a terminal or a console prints each display anew: there the printed text is
        # shown once, at the end
        printed = _LivePrinted(live=in_place)
        shown = Displayed()
        before = _figure_numbers()
        started = time.monotonic()
        # what this thread prints goes to `printed` (no other thread's: the user's cells
        # print where they always do), and all it displays is made inert on its way out
        with contained(printed) as scope, _Recorder(self.shell, shown, printed, scope):
            scope.on_detach(lambda: _said_detached(header, printed))
            executed = execute(code, namespace, f"<{label}>")
        seconds = time.monotonic() - started
        seen = "notebook" if in_place else "terminal"
        if scope.detached:  # it ended after it was cut loose: nothing more is shown
            for figure in _new_figures(before):
                _close(figure)
            return CodeResult(code, executed.status, text_form(
                label, executed, printed, shown, seconds, seen=seen), shown.kept(), seconds)
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
        shown.add(described or _text_of(data), data, data.get("image/png"))
        if described is not None:
            _close(value)


_DEFAULT_REPR = re.compile(r"<[\w.]+ (?:object|at 0x[0-9a-f]+)(?: at 0x[0-9a-f]+)?>")


def _text_of(data: Data) -> str:
    """An output's text for the model: its text/plain, unless that is only the default
    repr of an object shown as HTML (a Styler, `HTML(...)`): then the HTML's text."""
    plain = str(data.get("text/plain", ""))
    if "text/html" in data and (not plain or _DEFAULT_REPR.fullmatch(plain.strip())):
        return html_text(str(data["text/html"]))
    return plain or f"({', '.join(data)})"


def _said_detached(header: _CodeHeader, printed: _LivePrinted) -> None:
    """A run asked to stop goes on (it caught the interrupt, or sits in one C call): what
    it printed until now is shown, and its header says it was cut loose."""
    printed.draw()
    header.update(DETACHED)


_recorders: dict[int, _Recorder] = {}  # thread id -> the run's recorder (shells without hooks)
_proxies = 0  # runs using the publisher below, in all threads
_proxy_lock = threading.Lock()


class _Recorder:
    """Everything the code itself displays while it runs (`display(df)`, a Styler,
    `HTML(...)`, `plt.show()`) is made inert (`inert_output`) and its text kept, on its
    way out: in a kernel through a hook of the display publisher (ipykernel keeps hooks
    per thread: this run's only); elsewhere through `_Publisher`, which asks which thread
    displays. Our own printed-text output passes as it is; a run cut loose shows nothing."""

    def __init__(self, shell: Any, shown: Displayed, printed: _LivePrinted,
                 scope: Any) -> None:
        self.shell, self.shown, self.printed, self.scope = shell, shown, printed, scope
        self.publisher: Any = getattr(shell, "display_pub", None)
        self._hooked = hasattr(self.publisher, "register_hook")

    def take(self, data: Data, metadata: Data | None, *, new: bool = True
             ) -> tuple[Data, Data] | None:
        """What may be shown of one output of the run (None: nothing)."""
        if self.scope.detached:
            return None
        if self.printed.drawing:  # ours
            return data, metadata or {}
        data, metadata = inert_output(data, metadata)
        if new:  # an update of an output redraws it: it is not one more output
            self.shown.add(_text_of(data), data, data.get("image/png"))
        return data, metadata

    def __call__(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The kernel's hook: each message the run's thread publishes."""
        kind = message.get("msg_type")
        if kind not in ("display_data", "update_display_data"):
            return None if self.scope.detached else message
        content = message.get("content", {})
        taken = self.take(content.get("data", {}), content.get("metadata"),
                          new=kind == "display_data")
        if taken is None:
            return None
        content["data"], content["metadata"] = taken
        return message

    def __enter__(self) -> _Recorder:
        global _proxies
        if self._hooked:
            self.publisher.register_hook(self)
            return self
        _recorders[threading.get_ident()] = self
        with _proxy_lock:
            _proxies += 1
            if self.publisher is not None and not isinstance(self.publisher, _Publisher):
                self.shell.display_pub = _Publisher(self.publisher)
        return self

    def __exit__(self, *exc: object) -> None:
        global _proxies
        if self._hooked:
            self.publisher.unregister_hook(self)
            return
        _recorders.pop(threading.get_ident(), None)
        with _proxy_lock:
            _proxies -= 1
            current = getattr(self.shell, "display_pub", None)
            if not _proxies and isinstance(current, _Publisher):
                self.shell.display_pub = current.original


class _Publisher:
    """A shell's display publisher while runs go on, where the publisher has no hooks (a
    terminal shell, a plain one): a run thread's outputs go through its `_Recorder`, every
    other thread's pass untouched."""

    def __init__(self, original: Any) -> None:
        self.original = original

    def publish(self, data: Data, metadata: Data | None = None, *args: Any,
                **kwargs: Any) -> None:
        recorder = _recorders.get(threading.get_ident())
        if recorder is None:
            self.original.publish(data, metadata, *args, **kwargs)
            return
        taken = recorder.take(data, metadata, new=not kwargs.get("update"))
        if taken is None:
            return
        with recorder.printed.passing():  # a terminal prints it: the display, not printing
            self.original.publish(taken[0], taken[1], *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.original, name)


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
    setter = getattr(shell, "set_next_input", None)
    if setter is None:
        return source
    setter(source, replace=False)
    runs = source.count("# agent run ")
    return f"nbagent: the code of {runs} run(s) is in a new cell below, to keep"
