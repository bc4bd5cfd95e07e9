"""The one-off lines the magics show: a compaction (with what left the model's view and
how to get it back), its progress while it runs, a preview, an error, an interrupt and
the `%context` table. Every text the library wrote passes through `notebook_words`.
"""

from __future__ import annotations

import html
import re
from typing import Any

from IPython.display import display

from nbagent import METER_LEVELS, Breakdown, ContextState, Decision
from nbagent.events import CompactionStarted, Status
from nbagent.text import count, money, percent, tokens

from ._bundles import error_bundle, line, plain_line, status_bundle
from ._frontend import updates_in_place
from ._reading import MeterReading, billing_words
from ._texts import INTERRUPTED, first_line, notebook_words

_RAW_TAIL = re.compile(r"\s*\((\w+(?:Error|Exception)\b[^()]*(?:\([^()]*\)[^()]*)*)\)\s*$")


def _threshold_names(state: ContextState) -> list[str]:
    """The thresholds `%context` lists, lowest first: where each meter level starts (from
    `METER_LEVELS`, so a new level is listed without an edit) and the mid-loop snip's, each
    once (a level may start where the mid-loop snip does)."""
    names = dict.fromkeys([level.starts_at for level in METER_LEVELS if level.starts_at]
                          + ["midloop"])
    return sorted(names, key=lambda name: getattr(state.thresholds, name))


def decision_words(decision: Decision) -> str:
    """One line for a compaction, in the words every place says it (`Decision.words`)."""
    return decision.words()


def left_view_words(decision: Decision) -> str:
    """What left the model's view and how to bring it back (one line; "" when nothing did)."""
    left = decision.left_view_words()
    return notebook_words(left) if left else ""


def decision_bundle(decision: Decision, *, summary: bool = False) -> dict[str, str]:
    words = decision_words(decision)
    left = left_view_words(decision)
    parts = [html.escape(words)]
    if left:
        parts.append(f'<div class="nbagent-left-view">{html.escape(left)}</div>')
    if summary and decision.summary:
        parts.append(f"<details><summary>summary</summary><pre>"
                     f"{html.escape(decision.summary)}</pre></details>")
    return line("nbagent-compaction", "".join(parts), "\n".join(filter(None, [words, left])))


def show_decision(decision: Decision) -> None:
    """`%compact`'s answer: one line, what left the view, the summary behind a disclosure."""
    display(decision_bundle(decision, summary=True), raw=True)


def error_parts(message: str) -> tuple[str, str]:
    """An error as the cell shows it: the first line in notebook words (what happened and
    the fix), and the rest (the provider's raw text) as detail."""
    head = first_line(message)
    detail = message.strip()[len(head):].strip() if message.strip().startswith(head) else ""
    raw = _RAW_TAIL.search(head)
    if raw:
        head, detail = head[:raw.start()].rstrip(), "\n".join(filter(None, [raw.group(1),
                                                                           detail]))
    return notebook_words(head), detail


def show_error(message: str) -> None:
    """An error in one line (the message says the fix), on no red stderr."""
    display(error_bundle(*error_parts(message)), raw=True)


def show_interrupted(text: str = INTERRUPTED) -> None:
    """The one line an interrupted chat leaves."""
    display(line("nbagent-interrupted", f"<i>{html.escape(text)}</i>", text), raw=True)


def show_text(text: str, css_class: str = "nbagent-note") -> None:
    """A notice or answer of the notebook, in notebook words, wrapping between words."""
    display(plain_line(css_class, notebook_words(text)), raw=True)


class ProgressLine:
    """One status line while a compaction runs (subscribe it to the session's events):
    updated in place by display id, cleared when done."""

    def __init__(self) -> None:
        self._handle: Any = None
        self.shown: list[str] = []

    def __call__(self, event: object) -> None:
        if isinstance(event, Status):
            self.show(event.text)
        elif isinstance(event, CompactionStarted) and not self.shown:
            self.show("compacting…")

    def show(self, text: str) -> None:
        text = notebook_words(text)
        self.shown.append(text)
        if not updates_in_place():  # a terminal could not take a waiting line back
            return
        if self._handle is None:
            self._handle = display(status_bundle(text), raw=True, display_id=True)
        else:
            self._handle.update(status_bundle(text), raw=True)

    def clear(self) -> None:
        if self._handle is not None:
            self._handle.update(status_bundle(""), raw=True)


def delegated_words(branches: list[Any]) -> str:
    """`%context`'s line on the delegated tasks (`agent.branches()`): what their own
    windows took in, what came back, so what they kept out of this window; "" for none."""
    if not branches:
        return ""
    taken = sum(b.transcript_tokens for b in branches)
    returned = sum(b.returned_tokens for b in branches)
    kept = sum(b.kept_out for b in branches)
    cost = sum(b.cost for b in branches)
    paid = f" · they cost {money(cost)} (in the session cost)" if cost else ""
    return (f"delegated tasks: {len(branches)} — their own windows took in {tokens(taken)}, "
            f"{count(returned)} came back: {count(kept)} kept out of this window{paid}")


def _share(value: float) -> str:
    return "<1%" if 0 < value < 0.5 else percent(value)


def limit_rows(reading: MeterReading, state: Any) -> list[tuple[str, int, str, str]]:
    """The figures the percentages rest on, as `%context` lists them under what fills the
    window: (name, tokens, share, how it is made). The base (the auto-compact trigger, or the
    effective window when automatic compaction is off) is 100%."""
    limits = state.thresholds
    source = f"from {state.window_source}"
    if limits.window.raw_window != limits.context_window:
        source += f"; the model's is {limits.window.raw_window:,}, capped by auto_compact_window"
    rows = []
    if reading.armed:
        rows.append(("auto-compact trigger", reading.threshold, "100%", ""))
    rows.append(("effective window", limits.effective_window, "" if reading.armed else "100%",
                 f"window − output reserve {limits.output_reserve:,}"))
    rows.append(("window", limits.context_window, "", source))
    return rows


def show_breakdown(breakdown: Breakdown, *, cost: float, breaker: str | None = None,
                   billing: Any = None, last: Decision | None = None,
                   branches: list[Any] | None = None) -> None:
    """`%context`: what fills the window, every threshold, the breaker, the cost and what
    delegated tasks kept out of the window. The percentages are of the meter's base (the
    auto-compact trigger, or the effective window when automatic compaction is off) with
    its rounding, so "free" here is the meter's "left"; the trigger, the effective window
    and the window follow, named as the meter names them."""
    state = breakdown.state
    if breaker is None:
        breaker = "open" if getattr(state, "breaker_open", False) else "closed"
    reading = MeterReading.of(state, cost=cost)
    limits = state.thresholds
    base = max(1, reading.threshold)
    parts = {**breakdown.parts, "free": max(0, reading.threshold - state.tokens)}
    shares = {kind: _share(100 * tokens / base) for kind, tokens in parts.items()}
    shares["free"] = percent(reading.percent_left)
    how = {"tool schemas": notebook_words(getattr(breakdown, "tools_note", "") or "")}
    rows = [(kind, tokens, shares[kind], how.get(kind, "")) for kind, tokens in parts.items()]
    rows += limit_rows(reading, state)
    of = "% of the trigger" if reading.armed else "% of the effective window"
    armed = "armed" if state.auto_compact_armed else "off"
    costs = f"session cost {money(cost)}"
    paid = billing_words(billing)
    facts = [
        "thresholds: " + " · ".join(
            f"{limits.words(name)} {getattr(limits, name):,}"
            + (f" ({armed})" if name == "auto_compact" else "")
            for name in _threshold_names(state)),
        f"circuit breaker: {breaker} · {costs}" + (f" · {paid}" if paid else ""),
    ]
    note = getattr(state, "compaction_note", None)
    if note:
        facts.append(notebook_words(str(note)))
    if last is not None:
        facts.append(f"last compaction: {decision_words(last)}")
    delegated = delegated_words(branches or [])
    if delegated:
        facts.append(delegated)
    headline = f"{reading.headline} · level {state.level}"
    plain = "\n".join(
        [headline, f"{'':<22}{'tokens':>8}  {of}",
         *(f"{kind:<22}{count(size):>8}  {share:>5}{'  ' + how if how else ''}"
           for kind, size, share, how in rows),
         *facts]
    )
    cells = "".join(
        f"<tr><td>{html.escape(kind)}</td><td style='text-align:right'>{count(size)}</td>"
        f"<td style='text-align:right'>{share}</td><td>{html.escape(how)}</td></tr>"
        for kind, size, share, how in rows
    )
    head = (f"<tr><th></th><th style='text-align:right'>tokens</th>"
            f"<th style='text-align:right'>{html.escape(of)}</th><th></th></tr>")
    paragraphs = "".join(f"<p>{html.escape(fact)}</p>" for fact in facts)
    display({"text/plain": plain,
             "text/html": f'<div class="nbagent-context"><p><b>{html.escape(headline)}</b></p>'
                          f"<table>{head}{cells}</table>{paragraphs}</div>"},
            raw=True)
