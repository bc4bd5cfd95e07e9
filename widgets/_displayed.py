"""What an agent run displays, made inert before it reaches the page, whichever object
produced it (a DataFrame, a pandas Styler, `IPython.display.HTML`, `Markdown`, `SVG`,
`Javascript`, any `_repr_html_` or `_repr_markdown_`): HTML goes through the replies'
sanitizer (`_render.clean_html`), Markdown and LaTeX are rendered as a reply is, raster
images pass (the page draws them as `<img>`, which runs nothing), an SVG becomes such an
image, and every other kind (JavaScript, widgets, JSON, PDF, a renderer's own data) is
dropped for the output's text. JupyterLab trusts the outputs of a cell run in the live
session — their HTML is inserted as it is and handlers run — so this is the only gate:
the run's value and figures pass it when the runner shows them, and everything the code
displays itself passes it on its way out (`Recorder`), its text kept for the model.
"""

from __future__ import annotations

import base64
import html
import re
import threading
from typing import Any

import nh3

from nbagent.code import Displayed

from ._bundles import terminal_text
from ._render import clean_html, render_reply

Data = dict[str, Any]  # a mime bundle or its metadata, as a run displays it
# Kinds the page shows as an <img> of the data itself: inert, kept as they are.
RASTER = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")
# Kinds shown as HTML once made inert, in the order a front end prefers them.
AS_HTML = ("text/html", "text/markdown", "text/latex", "image/svg+xml")


def _html_of(mime: str, source: str) -> str:
    if mime == "text/html":
        return clean_html(source)
    if mime == "image/svg+xml":  # drawn as an image: an SVG in an <img> runs no script
        data = base64.b64encode(source.encode("utf-8", "replace")).decode("ascii")
        return f'<img src="data:image/svg+xml;base64,{data}" alt="an SVG image">'
    return render_reply(source)  # Markdown, and LaTeX as a reply's math


def _text(value: Any) -> str:
    if isinstance(value, list):  # nbformat's multi-line form
        return "".join(str(part) for part in value)
    return str(value)


def inert_output(data: dict[str, Any], metadata: dict[str, Any] | None = None
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """`data` (a mime bundle) and its `metadata` as they may be shown: the first kind of
    `AS_HTML` it holds as sanitized HTML, its raster images, its text/plain control-free;
    everything else dropped (said in the text when nothing else is left)."""
    shown: dict[str, Any] = {}
    for mime in AS_HTML:
        if mime in data:
            shown["text/html"] = _html_of(mime, _text(data[mime]))
            break
    for mime in RASTER:
        if isinstance(data.get(mime), str):
            shown[mime] = data[mime]
    plain = data.get("text/plain")
    if plain is not None:
        shown["text/plain"] = terminal_text(_text(plain))
    elif not shown:
        kinds = ", ".join(sorted(map(str, data))) or "empty"
        shown["text/plain"] = f"(an output of kind {kinds}: not shown, it could run code)"
    kept = {mime: value for mime, value in (metadata or {}).items() if mime in RASTER
            and mime in shown and isinstance(value, dict)}
    return shown, kept


def html_text(markup: str) -> str:
    """The text of sanitized HTML (what a reader of the page sees, roughly): each table row
    on a line of its own, its cells apart, no tags."""
    markup = re.sub(r"</(?:tr|p|div|li|h\d)>|<br\s*/?>", "\n", markup)
    markup = re.sub(r"</t[dh]>", "  ", markup)
    text = html.unescape(nh3.clean(markup, tags=set()))
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


_DEFAULT_REPR = re.compile(r"<[\w.]+ (?:object|at 0x[0-9a-f]+)(?: at 0x[0-9a-f]+)?>")


def text_of(data: Data) -> str:
    """An output's text for the model: its text/plain, unless that is only the default
    repr of an object shown as HTML (a Styler, `HTML(...)`): then the HTML's text."""
    plain = str(data.get("text/plain", ""))
    if "text/html" in data and (not plain or _DEFAULT_REPR.fullmatch(plain.strip())):
        return html_text(str(data["text/html"]))
    return plain or f"({', '.join(data)})"


_recorders: dict[int, Recorder] = {}  # thread id -> the run's recorder (shells without hooks)
_proxies = 0  # runs using the publisher below, in all threads
_proxy_lock = threading.Lock()


class Recorder:
    """Everything the run's code itself displays while it runs (`display(df)`, a Styler,
    `HTML(...)`, `plt.show()`) is made inert (`inert_output`) and its text kept, on its
    way out: in a kernel through a hook of the display publisher (ipykernel keeps hooks
    per thread: this run's only); elsewhere through `_Publisher`, which asks which thread
    displays. Our own printed-text output passes as it is; a run cut loose shows nothing."""

    def __init__(self, shell: Any, shown: Displayed, printed: Any, scope: Any) -> None:
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
            self.shown.add(text_of(data), data, data.get("image/png"))
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

    def __enter__(self) -> Recorder:
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
    terminal shell, a plain one): a run thread's outputs go through its `Recorder`, every
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
