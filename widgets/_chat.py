"""How a chat shows in a cell: the reply as Markdown redrawn on a steady cadence while it
streams, one status line under it while the agent waits ("thinking…", "running
describe(…)…"), tool calls as one collapsible line each, compactions, errors and
interrupts as one readable line. Every output carries text/plain beside its HTML.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Callable
from typing import Any

from IPython.display import display

from nbagent import Breakdown, ChatResult, Decision
from nbagent.events import (
    Compacted,
    CompactionStarted,
    Retrying,
    Status,
    ToolFinished,
    ToolStarted,
)

UPDATE_EVERY_S = 0.1  # redraw the streaming reply at most this often, and at least this often
CUT = "… [cut]"
INTERRUPTED = "interrupted — the session is intact"
CONTINUE_HINT = (
    "the reply was cut at the model's output limit — send `%chat continue` for the rest"
)
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})")

Bundle = dict[str, str]


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _short(arguments: str, limit: int = 60) -> str:
    try:
        parsed = json.loads(arguments or "{}")
        text = (
            ", ".join(f"{k}={v!r}" for k, v in parsed.items())
            if isinstance(parsed, dict)
            else arguments
        )
    except json.JSONDecodeError:
        text = arguments
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clean_cut(text: str, limit: int | None = None) -> str:
    """`text` cut at `limit` (or as given) on a word boundary when one is near, with a
    visible marker that something follows."""
    if limit is not None and len(text) <= limit:
        return text
    head = text if limit is None else text[:limit]
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= len(head) - 30 and space > 0:
        head = head[:space]
    return head.rstrip() + CUT


def _copy_button(code: str) -> str:
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


def with_copy_buttons(markdown: str) -> str:
    """The reply's Markdown with a copy button under each complete fenced code block."""
    out: list[str] = []
    fence: tuple[str, str] | None = None  # (indent, fence) of the open block
    code: list[str] = []
    for line in markdown.split("\n"):
        out.append(line)
        if fence is None:
            opened = _FENCE.match(line)
            if opened:
                fence, code = (opened.group(1), opened.group(2)), []
            continue
        indent, marker = fence
        closing = line.strip()
        if closing and set(closing) == {marker[0]} and len(closing) >= len(marker):
            out += [indent + _copy_button("\n".join(code)), ""]
            fence = None
        else:
            code.append(line[len(indent):] if line.startswith(indent) else line)
    return "\n".join(out)


def _line(css_class: str, html_text: str, plain: str) -> Bundle:
    return {
        "text/plain": plain,
        "text/html": f'<div class="{css_class}" style="color:var(--jp-content-font-color1,'
                     f'#1a1a1a)">{html_text}</div>',
    }


def _status_bundle(text: str) -> Bundle:
    if not text:
        return {"text/plain": ""}
    return _line("nbagent-status",
                 f'<i style="color:var(--jp-content-font-color2,#555)">{html.escape(text)}</i>',
                 text)


def _reply_bundle(text: str) -> Bundle:
    return {"text/markdown": with_copy_buttons(text), "text/plain": text}


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
    `view.finish(result)` after. `clock` is for tests."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 every_s: float = UPDATE_EVERY_S) -> None:
        self.text = ""  # the text block streaming now
        self._clock = clock
        self._every_s = every_s
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
            self._slot = display(_status_bundle(self._status), raw=True, display_id=True)
        return handle

    def status(self, text: str) -> None:
        """Show `text` as the one status line under the output ("" hides it)."""
        self._flush()
        if text == self._status:
            return
        self._status = text
        if self._slot is not None:
            self._slot.update(_status_bundle(text), raw=True)
        elif text:
            self._slot = display(_status_bundle(text), raw=True, display_id=True)

    def on_text(self, delta: str) -> None:
        """Streamed reply text: shown at once, then redrawn every `every_s` while it flows."""
        if not delta:
            return
        self.text += delta
        now = self._clock()
        if self._block is None:
            self._status = ""  # the text takes the status line's place
            self._block = self._append(_reply_bundle(self.text))
            self._drawn_at, self._drawn = now, self.text
        elif self._status:
            self.status("")
        if self._drawn_at is None or now - self._drawn_at >= self._every_s:
            self._draw(now)

    def _draw(self, now: float) -> None:
        if self._block is not None and self._drawn != self.text:
            self._block.update(_reply_bundle(self.text), raw=True)
        self._drawn_at, self._drawn = now, self.text

    def _flush(self) -> None:
        if self._block is not None and self._drawn != self.text:
            self._draw(self._clock())

    def __call__(self, event: object) -> None:
        """A subscriber: status lines, tool lines and compaction lines from events."""
        if isinstance(event, Status):
            self.status(event.text)
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
                words = decision_words(event.decision)
                self._flush()
                self._append(_line("nbagent-compaction", html.escape(words), words))
            elif self._slot is not None:
                self._slot.update(_status_bundle(""), raw=True)
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
        self._append(_error_bundle(message))

    def interrupted(self, text: str = INTERRUPTED) -> None:
        """The user interrupted: what streamed stays, then one line instead of a traceback."""
        self._end()
        self._append(_line("nbagent-interrupted", f"<i>{html.escape(text)}</i>", text))

    def _end(self) -> None:
        self._flush()
        self.status("")

    def finish(self, result: ChatResult) -> None:
        """The chat ended: draw the whole reply, clear the status, say why it stopped."""
        if self._block is not None:
            self._flush()
        elif result.text and not self.text:
            self._status = ""
            self._append(_reply_bundle(result.text))
        self.status("")
        if getattr(result, "truncated", False):
            self._append(_line("nbagent-truncated", "⋯ " + _inline_code(CONTINUE_HINT),
                               f"⋯ {CONTINUE_HINT}"))
        if result.stop_message:
            self._append(_line("nbagent-stop", f"<i>{html.escape(result.stop_message)}</i>",
                               result.stop_message))


def _inline_code(text: str) -> str:
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _tool_bundle(event: ToolFinished, name: str, arguments: str) -> Bundle:
    status = "" if event.ok else " ⚠ failed"
    cut = f" (cut from {event.full_chars:,})" if event.full_chars > event.chars else ""
    preview = event.preview
    if event.chars > len(preview):
        preview = clean_cut(preview)
    call = f"{name}({_short(arguments)})"
    head = f"{call} → {event.chars:,} chars{cut}{status}"
    return {
        "text/plain": head,
        "text/html": (
            f'<details class="nbagent-tool"><summary><code>{html.escape(call)}</code> → '
            f"{event.chars:,} chars{cut}{status}</summary><pre>{html.escape(arguments)}\n\n"
            f"{html.escape(preview)}</pre></details>"
        ),
    }


def decision_words(decision: Decision) -> str:
    """One line for a compaction: "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer
    call"; or why nothing was compacted, or why it failed."""
    levels = " → ".join(decision.levels)
    if decision.action == "compacted":
        calls = _plural(decision.summary_calls, "summarizer call")
        return (f"compacted ({levels}): {decision.tokens_before:,} → "
                f"{decision.tokens_after:,} tokens, {calls}")
    if decision.action == "failed":
        return (f"compaction failed: {decision.reason} — the history is unchanged "
                f"({decision.tokens_before:,} tokens)")
    return f"nothing compacted: {decision.reason} ({decision.tokens_before:,} tokens)"


def show_decision(decision: Decision) -> None:
    """`%compact`'s answer: one line, and the summary it wrote behind a disclosure."""
    words = decision_words(decision)
    summary = (
        f"<details><summary>summary</summary><pre>{html.escape(decision.summary)}</pre></details>"
        if decision.summary
        else ""
    )
    bundle = _line("nbagent-compaction", html.escape(words) + summary, words)
    display(bundle, raw=True)


def _error_bundle(message: str) -> Bundle:
    return {
        "text/plain": f"nbagent: {message}",
        "text/html": (
            '<div class="nbagent-error" style="border-left:4px solid '
            "var(--jp-error-color1,#d32f2f);padding:2px 8px;color:"
            'var(--jp-content-font-color1,#1a1a1a)"><b>nbagent:</b> '
            f"{html.escape(message, quote=False)}</div>"
        ),
    }


def show_error(message: str) -> None:
    """An error in one line (the message says the fix), on no red stderr."""
    display(_error_bundle(message), raw=True)


def show_interrupted(text: str = INTERRUPTED) -> None:
    """The one line an interrupted chat leaves."""
    display(_line("nbagent-interrupted", f"<i>{html.escape(text)}</i>", text), raw=True)


def show_breakdown(breakdown: Breakdown, *, cost: float, breaker: str | None = None) -> None:
    """`%context`: what fills the window, every threshold, the breaker and the cost.
    `breaker` says how the circuit breaker stands (default: from the context state)."""
    state = breakdown.state
    if breaker is None:
        breaker = "open" if getattr(state, "breaker_open", False) else "closed"
    limits = state.thresholds
    window = max(1, limits.effective_window)
    rows = "".join(
        f"<tr><td>{html.escape(kind)}</td><td style='text-align:right'>{tokens:,}</td>"
        f"<td style='text-align:right'>{100 * tokens / window:.1f}%</td></tr>"
        for kind, tokens in breakdown.parts.items()
    )
    armed = "armed" if state.auto_compact_armed else "off"
    facts = [
        f"{state.tokens:,} tokens of an effective window of {limits.effective_window:,} "
        f"(window {limits.window.raw_window:,} from {state.window_source}; output reserve "
        f"{limits.output_reserve:,}) · {state.percent_left:.0f}% left · level {state.level}",
        f"thresholds: warning {limits.warning:,} · error {limits.error:,} · mid-loop "
        f"{limits.midloop:,} · auto-compact {limits.auto_compact:,} ({armed}) · blocking "
        f"{limits.blocking:,}",
        f"circuit breaker: {breaker} · session cost ${cost:.4f}",
    ]
    note = getattr(state, "compaction_note", None)
    if note:
        facts.append(str(note))
    plain = "\n".join(
        [*(f"{kind:<20}{tokens:>10,}  {100 * tokens / window:5.1f}%"
           for kind, tokens in breakdown.parts.items()), *facts]
    )
    paragraphs = "".join(f"<p>{html.escape(fact)}</p>" for fact in facts)
    display({"text/plain": plain,
             "text/html": f'<div class="nbagent-context"><table>{rows}</table>{paragraphs}</div>'},
            raw=True)
