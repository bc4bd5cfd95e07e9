"""Running one piece of the model's code in a namespace, the way a notebook cell runs: the
body executed, the last expression's value kept for display, every way it can end
(an error, the user's interrupt, `sys.exit`) caught as that run's outcome. Also the
bounded buffers that hold what a run prints (`BoundedText`) and what it displays
(`Displayed`): head and tail, however much it prints or shows, bounded once — the model's
text, the archive's record and what stays in memory are all read from them — and the short
text the model reads for a figure. No IPython here: both runners use it.
"""

from __future__ import annotations

import ast
import linecache
import threading
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ._code_stop import left, user_code

# how a run ended; "not run": it was asked to stop before its code started (`_code_stop`)
Status = Literal["ok", "error", "interrupted", "exited", "not run"]
HEAD_CHARS = 6_000  # what a run printed first, kept whole
TAIL_CHARS = 6_000  # and what it printed last
TRACEBACK_CHARS = 6_000
OUTPUT_CHARS = 4_000  # one displayed output's text, for the model
SHOWN_HEAD_CHARS = 8_000  # the text of the first outputs a run displays, kept
SHOWN_TAIL_CHARS = 8_000  # and of the last ones
FIGURES_KEPT = 4  # figures (PNG) kept for a model that reads images: the first and last


class BoundedText:
    """A file-like sink that keeps the first `head` and the last `tail` characters written
    and counts the rest: a loop printing gigabytes costs neither memory nor the window.
    Writes may come from any thread."""

    def __init__(self, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> None:
        self._head_limit, self._tail_limit = head, tail
        self._head: list[str] = []
        self._head_size = 0
        self._tail = ""
        self.total = 0
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        written = len(text)
        with self._lock:
            self.total += len(text)
            room = self._head_limit - self._head_size
            if room > 0:
                self._head.append(text[:room])
                self._head_size += min(room, len(text))
                text = text[room:]
            if text:
                # the tail keeps only its last `tail` characters: older ones are counted
                self._tail = (self._tail + text)[-self._tail_limit:]
        return written

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def cut(self) -> int:
        """How many characters were written and dropped from the middle."""
        return self.total - self._head_size - len(self._tail)

    def text(self) -> str:
        """The head, a marker saying how much was dropped, the tail."""
        with self._lock:
            head = "".join(self._head)
            if not self._tail:
                return head
            dropped = self.total - len(head) - len(self._tail)
            if dropped <= 0:
                return head + self._tail
            return f"{head}\n[… {dropped:,} characters not kept …]\n{self._tail}"


@dataclass(frozen=True)
class Shown:
    """One output a run displayed, as kept: its number among all it displayed, its text
    (a DataFrame's text table, a figure's description; bounded), the kinds of data it held
    and, for a figure kept for the model, its PNG (base64)."""

    number: int
    text: str
    types: tuple[str, ...]
    png: str | None = None


class Displayed:
    """What a run displayed, bounded once however much it shows: the outputs whose text
    fits in a head of `head` characters, those that fit in a tail of `tail` (older ones
    leave it), and how many were dropped between; each output's text cut to `OUTPUT_CHARS`
    first. The PNG of the first and last `FIGURES_KEPT // 2` figures is kept, no other data
    (the front end got the output itself). Adds may come from any thread."""

    def __init__(self, head: int = SHOWN_HEAD_CHARS, tail: int = SHOWN_TAIL_CHARS) -> None:
        self._head_limit, self._tail_limit = head, tail
        self._head: list[Shown] = []
        self._head_size = 0
        self._tail: list[Shown] = []
        self._tail_size = 0
        self.total = 0  # outputs displayed
        self._lock = threading.Lock()

    def add(self, text: str, types: Iterable[str], png: str | None = None) -> None:
        if len(text) > OUTPUT_CHARS:
            text = f"{text[:OUTPUT_CHARS]}\n[… {len(text) - OUTPUT_CHARS:,} characters cut]"
        first, last = FIGURES_KEPT // 2, FIGURES_KEPT - FIGURES_KEPT // 2
        with self._lock:
            self.total += 1
            if self._head_size + len(text) <= self._head_limit and not self._tail:
                if png is not None and sum(s.png is not None for s in self._head) >= first:
                    png = None
                self._head.append(Shown(self.total, text, tuple(sorted(types)), png))
                self._head_size += len(text)
                return
            self._tail.append(Shown(self.total, text, tuple(sorted(types)), png))
            self._tail_size += len(text)
            while len(self._tail) > 1 and self._tail_size > self._tail_limit:
                self._tail_size -= len(self._tail.pop(0).text)
            with_png = [i for i, each in enumerate(self._tail) if each.png is not None]
            for index in with_png[:-last] if len(with_png) > last else []:
                each = self._tail[index]  # only the last figures keep their image
                self._tail[index] = Shown(each.number, each.text, each.types)

    def kept(self) -> list[Shown]:
        """The outputs kept, in order (numbers jump where some were dropped)."""
        with self._lock:
            return [*self._head, *self._tail]

    @property
    def dropped(self) -> int:
        with self._lock:
            return self.total - len(self._head) - len(self._tail)


@dataclass
class Executed:
    """How one run ended: its status, the last expression's value (when there was one)
    and, unless it finished, what stopped it as text."""

    status: Status
    value: Any = None
    has_value: bool = False
    error: str = ""
    error_name: str = ""


def execute(code: str, namespace: dict[str, Any], filename: str) -> Executed:
    """Run `code` in `namespace` as a notebook cell runs: its last expression's value is
    returned for display, not printed. Never raises: a syntax error, an exception, the
    user's interrupt (KeyboardInterrupt) and `sys.exit` end only this run."""
    try:
        tree = ast.parse(code, filename, "exec")
    except SyntaxError as error:
        return Executed("error", error=_traceback_text(error, filename),
                        error_name="SyntaxError")
    # the source is kept where tracebacks look for it, so they show the failing line
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body.pop()
    try:
        with user_code() as may:  # a stop lands only in here (`_code_stop`)
            if not may:
                return Executed("not run")
            exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 -- the user allowed it
            if last is None:
                return Executed("ok")
            value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)  # noqa: S307
            return Executed("ok", value, value is not None)
    except KeyboardInterrupt as stop:
        left()  # it may have landed as the block was left, before the stop was withdrawn
        return Executed("interrupted", error=_traceback_text(stop, filename),
                        error_name="KeyboardInterrupt")
    except SystemExit as stop:  # sys.exit ends the run, never the kernel
        return Executed("exited", error=f"SystemExit: {stop.code!r}", error_name="SystemExit")
    except BaseException as error:  # noqa: B036 -- whatever the code raises is its outcome
        return Executed("error", error=_traceback_text(error, filename),
                        error_name=type(error).__name__)


def _traceback_text(error: BaseException, filename: str) -> str:
    """The traceback from the first frame of the model's code (our frames are noise)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(error), error, tb, chain=False))
    # A chained error's own traceback runs inside the library that raised it (pandas'
    # KeyError under its own KeyError: thousands of characters of its internals), so the
    # model reads what each one was, in a line, under the traceback of the code's error.
    seen, link = {id(error)}, _chained(error)
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        what = "".join(traceback.format_exception_only(type(link), link)).strip()
        text += f"\n(raised while handling {what})"
        link = _chained(link)
    if len(text) > TRACEBACK_CHARS:
        half = TRACEBACK_CHARS // 2
        text = f"{text[:half]}\n[… traceback cut …]\n{text[-half:]}"
    return text.rstrip()


def _chained(error: BaseException) -> BaseException | None:
    """The error `error` was raised from or while handling, as Python would show it."""
    if error.__cause__ is not None:
        return error.__cause__
    return None if error.__suppress_context__ else error.__context__


def describe_figure(figure: Any) -> str:
    """A matplotlib figure in a line or two the model can read: its size, and per axes
    the title, the axis labels and what is drawn (read by duck typing: no matplotlib
    import here)."""
    try:
        width, height = (round(v) for v in figure.get_size_inches() * figure.dpi)
        parts = [f"figure {width}×{height} px"]
        for axes in figure.get_axes():
            drawn = [f"{len(axes.get_lines())} line(s)"] if axes.get_lines() else []
            if axes.patches:
                drawn.append(f"{len(axes.patches)} bar(s)/patch(es)")
            if axes.collections:
                drawn.append(f"{len(axes.collections)} collection(s) (e.g. scatter points)")
            if axes.images:
                drawn.append(f"{len(axes.images)} image(s)")
            words = [f"title {axes.get_title()!r}" if axes.get_title() else "",
                     f"x {axes.get_xlabel()!r}" if axes.get_xlabel() else "",
                     f"y {axes.get_ylabel()!r}" if axes.get_ylabel() else "",
                     ", ".join(drawn)]
            parts.append("axes: " + "; ".join(w for w in words if w) if any(words)
                         else "empty axes")
        return "[" + "; ".join(parts) + "]"
    except Exception:  # a figure we cannot read is still a figure
        return "[a figure]"
