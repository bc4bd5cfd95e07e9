"""How a chat shows in a cell: the reply rendered to inert HTML (`_render`) and redrawn on
a steady cadence while it streams, one status line under it while the agent waits
("thinking…", "running describe(…)…"), tool calls as one collapsible line each,
compactions, errors and interrupts as one readable line. Every output carries text/plain
beside its HTML, free of control sequences. Where the front end cannot redraw an output
(a terminal), `ChatDisplay()` is the terminal's view instead (`_chat_terminal`).
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable
from typing import Any

from IPython.display import display

from nbagent import ChatResult
from nbagent.events import (
    Compacted,
    CompactionStarted,
    Retrying,
    Status,
    ToolFinished,
    ToolStarted,
)

from ._bundles import (
    Bundle,
    clean_cut,
    error_bundle,
    inline_code,
    line,
    plain_line,
    status_bundle,
    terminal_text,
)
from ._frontend import updates_in_place
from ._render import render_reply
from ._report import decision_bundle, error_parts
from ._texts import INTERRUPTED, REPLACED, notebook_words

UPDATE_EVERY_S = 0.1  # redraw the streaming reply at most this often, and at least this often
# A redraw renders the whole reply again: its interval stays this many times what the last
# render took, so a very long reply costs the kernel a bounded share of its time.
RENDER_SHARE = 10
CONTINUE_HINT = (
    "the reply was cut at the model's output limit — send `%chat continue` for the rest"
)


def _short(arguments: str, limit: int = 60) -> str:
    try:
        parsed = json.loads(arguments.strip() or "{}")
        text = (
            ", ".join(f"{k}={v!r}" for k, v in parsed.items())
            if isinstance(parsed, dict)
            else arguments
        )
    except json.JSONDecodeError:
        text = arguments
    return text if len(text) <= limit else text[: limit - 1] + "…"


def copy_button(code: str) -> str:
    """Our copy button for one code block (our markup, added after sanitizing): the code
    rides in an escaped attribute, so the handler reads it as data, never as script."""
    value = html.escape(code, quote=True).replace("\n", "&#10;").replace("$", "&#36;")
    script = (
        "const c=this.dataset.code,b=this;"
        "(navigator.clipboard?navigator.clipboard.writeText(c):Promise.reject())"
        ".catch(()=>{const t=document.createElement('textarea');t.value=c;"
        "document.body.appendChild(t);t.select();document.execCommand('copy');t.remove();})"
        ".then(()=>{b.textContent='copied';})"
    )
    return (
        f'<button class="nbagent-copy" title="Copy this code" data-code="{value}" '
        f'onclick="{html.escape(script, quote=True)}" style="font-size:11px;padding:1px 8px;'
        "cursor:pointer;border-radius:3px;color:var(--jp-ui-font-color1,#1a1a1a);"
        "background:var(--jp-layout-color2,#eeeeee);border:1px solid "
        'var(--jp-border-color1,#8a8a8a)">copy</button>'
    )


def reply_bundle(text: str) -> Bundle:
    """The reply as the page shows it (sanitized HTML with copy buttons) and as a terminal
    or a text export reads it (the Markdown as written, without control sequences)."""
    rendered = render_reply(text, copy_button)
    # JupyterLab styles some parts by their parent (`.jp-RenderedHTMLCommon > pre`): the
    # wrapper carries that class so a reply looks as the same Markdown would.
    return {"text/html": f'<div class="nbagent-reply jp-RenderedHTMLCommon" '
                         f'style="padding:0">{rendered}</div>',
            "text/plain": terminal_text(text)}


def retry_words(error: str, wait_s: float) -> str:
    """"retrying in 4 s (rate limit)": a transient failure as a quiet status line."""
    lowered = error.lower()
    if "429" in lowered or "rate" in lowered:
        reason = "rate limit"
    elif "timeout" in lowered or "timed out" in lowered:
        reason = "timed out"
    elif any(code in lowered for code in ("500", "502", "503", "504", "overloaded")):
        reason = "provider unavailable"
    else:
        reason = clean_cut(error.strip().splitlines()[0] if error.strip() else "error", 60)
    return f"retrying in {max(1, round(wait_s))} s ({reason})"


class ChatDisplay:
    """One cell's view of a chat. Subscribe it to the session's events and pass
    `on_text=view.on_text`; call `view.status("thinking…")` before the request and
    `view.finish(result)` after. `clock` is for tests.

    Made where the front end cannot redraw an output in place (terminal IPython, jupyter
    console), it is a `TerminalChat`, which prints each thing once (as `pathlib.Path()`
    is a `PosixPath`); `live=True` or `False` chooses."""

    def __new__(cls, *args: Any, live: bool | None = None, **kwargs: Any) -> ChatDisplay:
        if cls is ChatDisplay and not (updates_in_place() if live is None else live):
            from ._chat_terminal import TerminalChat

            cls = TerminalChat
        return super().__new__(cls)

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 every_s: float = UPDATE_EVERY_S, live: bool | None = None) -> None:
        self.text = ""  # the text block streaming now
        self._clock = clock
        self._every_s = every_s
        self._interval = every_s  # every_s, or longer while a long reply takes time to render
        self._block: Any = None  # the display handle of the streaming text
        self._drawn_at: float | None = None
        self._drawn = ""
        self._slot: Any = None  # the status line's handle: always the cell's last output
        self._status = ""
        self._calls: dict[str, tuple[str, str]] = {}

    def _append(self, bundle: Bundle) -> Any:
        """Add an output at the bottom of the cell, keeping the status line under it."""
        if self._slot is not None:
            handle, self._slot = self._slot, None
            handle.update(bundle, raw=True)
        else:
            handle = display(bundle, raw=True, display_id=True)
        if self._status:
            self._slot = display(status_bundle(self._status), raw=True, display_id=True)
        return handle

    def status(self, text: str) -> None:
        """Show `text` as the one status line under the output ("" hides it)."""
        self._flush()
        if text == self._status:
            return
        self._status = text
        if self._slot is not None:
            self._slot.update(status_bundle(text), raw=True)
        elif text:
            self._slot = display(status_bundle(text), raw=True, display_id=True)

    def on_text(self, delta: str) -> None:
        """Streamed reply text: shown at once, then redrawn every `every_s` while it flows."""
        if not delta:
            return
        self.text += delta
        now = self._clock()
        if self._block is None:
            self._status = ""  # the text takes the status line's place
            self._block = self._append(reply_bundle(self.text))
            self._drawn_at, self._drawn = now, self.text
        elif self._status:
            self.status("")
        if self._drawn_at is None or now - self._drawn_at >= self._interval:
            self._draw(now)

    def _draw(self, now: float) -> None:
        if self._block is not None and self._drawn != self.text:
            started = time.perf_counter()
            bundle = reply_bundle(self.text)
            spent = time.perf_counter() - started
            self._interval = max(self._every_s, RENDER_SHARE * spent)
            self._block.update(bundle, raw=True)
        self._drawn_at, self._drawn = now, self.text

    def _flush(self) -> None:
        if self._block is not None and self._drawn != self.text:
            self._draw(self._clock())

    def __call__(self, event: object) -> None:
        """A subscriber: status lines, tool lines and compaction lines from events."""
        if isinstance(event, Status):
            self.status(notebook_words(event.text))
        elif isinstance(event, Retrying):
            if self.text and self._block is not None:  # the stream broke: it starts again
                self.text, self._drawn_at = "", None
                self._block.update({"text/plain": ""}, raw=True)
                self._drawn = ""
            self.status(retry_words(event.error, event.wait_s))
        elif isinstance(event, CompactionStarted):
            self.status("compacting…")
        elif isinstance(event, Compacted):
            self._status = ""  # compaction is over; the line below takes the status's place
            if event.decision.action in ("compacted", "failed"):
                self._flush()
                self._append(decision_bundle(event.decision))
            elif self._slot is not None:
                self._slot.update(status_bundle(""), raw=True)
        elif isinstance(event, ToolStarted):
            self._flush()
            self._calls[event.call_id] = (event.name, event.arguments)
            self._block, self.text = None, ""  # text after a tool call starts a new block
            self.status(f"running {event.name}({_short(event.arguments, 40)})…")
        elif isinstance(event, ToolFinished):
            name, arguments = self._calls.get(event.call_id, (event.name, ""))
            self._append(_tool_bundle(event, name, arguments))
            self.status("thinking…")

    def error(self, message: str) -> None:
        """The chat failed: what streamed stays, then the error in one line."""
        self._end()
        self._append(error_bundle(*error_parts(message)))

    def interrupted(self, text: str = INTERRUPTED) -> None:
        """The user interrupted: what streamed stays, then one line instead of a traceback."""
        self._end()
        self._append(line("nbagent-interrupted", f"<i>{html.escape(text)}</i>", text))

    def _end(self) -> None:
        self._flush()
        self.status("")

    def finish(self, result: ChatResult) -> None:
        """The chat ended: draw the whole reply, clear the status, say why it stopped."""
        self._final_reply(result)
        self.status("")
        if getattr(result, "truncated", False):
            self._append(line("nbagent-truncated", "⋯ " + inline_code(CONTINUE_HINT),
                               f"⋯ {CONTINUE_HINT}"))
        if result.stop_message:
            stop = notebook_words(result.stop_message)
            self._append(line("nbagent-stop", f"<i>{html.escape(stop)}</i>", stop))
        if result.replaced:
            self._append(plain_line("nbagent-replaced", REPLACED))
        if result.cost:
            self._append(plain_line("nbagent-cost", f"this cell cost ${result.cost:.4f}"))

    def _final_reply(self, result: ChatResult) -> None:
        if self._block is not None:
            self._flush()
        elif result.text and not self.text:  # a model that did not stream
            self._status = ""
            self._append(reply_bundle(result.text))

    def note(self, text: str, css_class: str = "nbagent-note") -> None:
        """One more line under the chat (a proposed cell, a footer), in notebook words."""
        self._append(plain_line(css_class, notebook_words(text)))


def _tool_bundle(event: ToolFinished, name: str, arguments: str) -> Bundle:
    status = "" if event.ok else " ⚠ failed"
    cut = f" (cut from {event.full_chars:,})" if event.full_chars > event.chars else ""
    preview = event.preview
    if event.chars > len(preview):
        preview = clean_cut(preview)
    call = f"{name}({_short(arguments)})"
    head = f"{call} → {event.chars:,} chars{cut}{status}"
    return {
        "text/plain": terminal_text(head),
        "text/html": (
            f'<details class="nbagent-tool"><summary><code>{html.escape(call)}</code> → '
            f"{event.chars:,} chars{cut}{status}</summary><pre>{_arguments_block(arguments)}"
            f"{html.escape(preview)}</pre></details>"
        ),
    }


def _arguments_block(arguments: str) -> str:
    """The call's arguments above its result; none (`{}` or blank) shows nothing."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        parsed = arguments
    if parsed in ({}, [], None, ""):
        return ""
    return html.escape(arguments) + "\n\n"
