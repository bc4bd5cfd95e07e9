"""How a chat shows in a cell: the reply as Markdown streamed live, tool calls as
one collapsible line each, compactions and errors as short readable blocks."""

from __future__ import annotations

import html
import json
import time
from typing import Any

from IPython.display import HTML, Markdown, display

from nbagent import ChatResult, Decision
from nbagent._breakdown import Breakdown
from nbagent.events import Retrying, ToolFinished, ToolStarted

UPDATE_EVERY_S = 0.1


def _short(arguments: str, limit: int = 60) -> str:
    try:
        parsed = json.loads(arguments or "{}")
        text = (
            ", ".join(f"{k}={v!r}" for k, v in parsed.items())
            if isinstance(parsed, dict)
            else (arguments)
        )
    except json.JSONDecodeError:
        text = arguments
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ChatDisplay:
    """Subscribe to an agent for one cell: `agent.hooks.append(view)`, `on_text=view.on_text`."""

    def __init__(self) -> None:
        self.text = ""
        self._handle: Any = None
        self._shown = 0.0
        self._calls: dict[str, tuple[str, str]] = {}

    def on_text(self, delta: str) -> None:
        self.text += delta
        if self._handle is None:
            self._handle = display(Markdown(self.text), display_id=True)
        elif time.monotonic() - self._shown >= UPDATE_EVERY_S:
            self._handle.update(Markdown(self.text))
        self._shown = time.monotonic()

    def __call__(self, event: object) -> None:
        if isinstance(event, Retrying) and self.text:  # the stream broke: start it again
            self.text = ""
            if self._handle is not None:
                self._handle.update(Markdown(f"*(retrying: {event.event.error[:80]})*"))
        elif isinstance(event, ToolStarted):
            self._calls[event.call_id] = (event.name, event.arguments)
            self._handle = None  # text after a tool call starts a new block
            self.text = ""
        elif isinstance(event, ToolFinished):
            name, arguments = self._calls.get(event.call_id, (event.name, ""))
            status = "" if event.ok else " ⚠"
            cut = f" (cut from {event.full_chars:,})" if event.full_chars > event.chars else ""
            display(
                HTML(
                    f'<details class="nbagent-tool"><summary><code>{html.escape(name)}'
                    f"({html.escape(_short(arguments))})</code> → {event.chars:,} chars"
                    f"{cut}{status}"
                    f"</summary><pre>{html.escape(arguments)}\n\n{html.escape(event.preview)}</pre>"
                    "</details>"
                )
            )

    def finish(self, result: ChatResult) -> None:
        if self._handle is not None:
            self._handle.update(Markdown(self.text))
        elif result.text and not self.text:
            display(Markdown(result.text))
        if result.stop_message:
            display(
                HTML(f'<div class="nbagent-stop"><i>{html.escape(result.stop_message)}</i></div>')
            )


def show_error(message: str) -> None:
    display(
        HTML(
            f'<div class="nbagent-error" style="border-left:4px solid #c62828;'
            f'padding:4px 8px"><b>nbagent:</b> {html.escape(message, quote=False)}</div>'
        )
    )


def show_decision(decision: Decision) -> None:
    levels = " → ".join(decision.levels) or "nothing to do"
    head = (
        f"<b>compaction {decision.action}</b>: {html.escape(levels)} · "
        f"{decision.tokens_before:,} → {decision.tokens_after:,} tokens · "
        f"{decision.summary_calls} summarizer calls"
    )
    if decision.action != "compacted":
        head += f"<br><small>{html.escape(decision.reason)}</small>"
    summary = (
        (f"<details><summary>summary</summary><pre>{html.escape(decision.summary)}</pre></details>")
        if decision.summary
        else ""
    )
    display(HTML(f'<div class="nbagent-compaction">{head}{summary}</div>'))


def show_breakdown(breakdown: Breakdown, *, breaker: str, cost: float) -> None:
    state = breakdown.state
    limits = state.thresholds
    rows = "".join(
        f"<tr><td>{html.escape(kind)}</td><td style='text-align:right'>{tokens:,}</td>"
        f"<td style='text-align:right'>{100 * tokens / max(1, limits.effective_window):.1f}%"
        "</td></tr>"
        for kind, tokens in breakdown.parts.items()
    )
    armed = "armed" if state.auto_compact_armed else "off"
    display(
        HTML(
            f'<div class="nbagent-context"><table>{rows}</table>'
            f"<p>{state.tokens:,} tokens of an effective window of {limits.effective_window:,} "
            f"(window {limits.window.raw_window:,} from {state.window_source}; output reserve "
            f"{limits.output_reserve:,}) · {state.percent_left:.0f}% left · level {state.level}</p>"
            f"<p>thresholds: warning {limits.warning:,} · error {limits.error:,} · mid-loop "
            f"{limits.midloop:,} · auto-compact {limits.auto_compact:,} ({armed}) · blocking "
            f"{limits.blocking:,}</p><p>circuit breaker: {html.escape(breaker)} · session cost "
            f"${cost:.4f}</p></div>"
        )
    )
