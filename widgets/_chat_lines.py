"""The lines a chat is made of: the reply as the page shows it (sanitized HTML with copy
buttons, `_render`) and as a terminal reads it, a tool call with its arguments and result
preview, a delegated task with its steps and report (`BranchLine`), a retry in words.
Outside text is escaped into our markup and stripped of control sequences in text/plain;
how and when the lines are shown is `_chat`'s.
"""

from __future__ import annotations

import html
import json
import re

from nbagent.events import (
    Branch,
    Compacted,
    Retrying,
    Status,
    ToolFinished,
    ToolStarted,
)
from nbagent.providers import retry_reason
from nbagent.text import count, money, tokens, tool_call

from ._bundles import Bundle, clean_cut, terminal_text
from ._render import render_reply
from ._texts import notebook_words

MAX_BRANCH_STEPS = 40  # the steps a delegated task's line lists (the newest; the rest counted)
RUNNING_CHARS = 40  # a running call's arguments on its status line, at most


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


def retry_words(error: str, wait_s: float, reason: str = "") -> str:
    """"retrying in 4 s (rate limit)": a transient failure as a quiet status line. The
    reason is the event's, as the agent classified the failure; an event without one is
    classified by the same rules (`retry_reason`), else its first line is shown, readable."""
    words = reason or retry_reason(error) or _readable_line(error)
    return f"retrying in {max(1, round(wait_s))} s ({words})"


_JSON_MESSAGE = re.compile(r'"(?:message|error|detail)"\s*:\s*"((?:[^"\\]|\\.)+)"')


def _readable_line(error: str, limit: int = 60) -> str:
    """An error's first line without a JSON body's punctuation (its message if it has one),
    cut on a word: `APIError: {"error":"Model x is loading"}` → `APIError: Model x is loading`."""
    first = next((part.strip() for part in error.splitlines() if part.strip()), "") or "error"
    head, brace, body = first.partition("{")
    if brace:
        found = _JSON_MESSAGE.search(body)
        text = (found.group(1).replace('\\"', "'") if found
                else re.sub(r"[{}\[\]]", " ", body.replace('"', "")))
        head = head.strip().rstrip(":-").rstrip()
        first = f"{head}: {text}" if head else text
    return clean_cut(" ".join(first.split()), limit)


def tool_head(event: ToolFinished, name: str, arguments: str) -> str:
    """A finished tool call in one line: the call, what the model got, whether it failed."""
    status = "" if event.ok else " ⚠ failed"
    cut = f" (cut from {event.full_chars:,})" if event.full_chars > event.chars else ""
    return f"{tool_call(name, arguments)} → {event.chars:,} chars{cut}{status}"


def tool_bundle(event: ToolFinished, name: str, arguments: str) -> Bundle:
    status = "" if event.ok else " ⚠ failed"
    cut = f" (cut from {event.full_chars:,})" if event.full_chars > event.chars else ""
    preview = event.preview
    if event.chars > len(preview):
        preview = clean_cut(preview)
    call = tool_call(name, arguments)
    head = tool_head(event, name, arguments)
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


class BranchLine:
    """A delegated task's one line: while it runs, what it does now; then how it ended
    (its rounds, its tokens — in its own window and returned — and its cost). Opened, its
    steps (each tool call as a tool line reads, each compaction of its own history) and
    the report that returned. `see` takes the branch's events (`BranchProgress.event`)."""

    def __init__(self, number: int, task: str, model: str) -> None:
        self.number, self.task, self.model = number, task, model
        self.now = "starting…"
        self.steps: list[str] = []
        self.ended: Branch | None = None
        self.handle: object = None  # where it is drawn, for the display that draws it
        self._calls: dict[str, tuple[str, str]] = {}

    def see(self, event: object) -> bool:
        """Take one of the branch's events; True when the line changed."""
        before = (self.now, len(self.steps))
        if isinstance(event, Status) and event.text:
            self.now = notebook_words(event.text)
        elif isinstance(event, ToolStarted):
            self._calls[event.call_id] = (event.name, event.arguments)
            self.now = f"running {tool_call(event.name, event.arguments, RUNNING_CHARS)}…"
        elif isinstance(event, ToolFinished):
            name, arguments = self._calls.get(event.call_id, (event.name, ""))
            self.steps.append(tool_head(event, name, arguments))
            self.now = "thinking…"
        elif isinstance(event, Compacted) and event.decision.action in ("compacted", "failed"):
            self.steps.append(f"its own context: {event.decision.words()}")
        elif isinstance(event, Retrying):
            self.now = retry_words(event.error, event.wait_s, event.reason)
        return (self.now, len(self.steps)) != before

    def head(self) -> str:
        task = clean_cut(" ".join(self.task.split()), 80)
        head = f"delegated task {self.number}: {task}"
        ended = self.ended
        if ended is None:
            return f"{head} — {self.now}"
        cost = f", {money(ended.cost)}" if ended.cost else ""
        return (f"{head} → {ended.status}: {ended.rounds} round(s), {ended.tool_calls} tool "
                f"call(s) with {self.model}; {tokens(ended.transcript_tokens)} in its own "
                f"window, {count(ended.returned_tokens)} returned{cost}")

    def bundle(self) -> Bundle:
        head = self.head()
        shown = self.steps[-MAX_BRANCH_STEPS:]
        earlier = len(self.steps) - len(shown)
        items = ([f"<li><i>{earlier:,} earlier step(s)</i></li>"] if earlier else []) + [
            f"<li><code>{html.escape(step)}</code></li>" for step in shown]
        steps = f"<ol>{''.join(items)}</ol>" if items else ""
        report = (f"<div>report:</div><pre>{html.escape(terminal_text(self.ended.result))}"
                  "</pre>" if self.ended is not None else "")
        return {
            "text/plain": terminal_text(head),
            "text/html": f'<details class="nbagent-branch"><summary>{html.escape(head)}'
                         f"</summary>{steps}{report}</details>",
        }
