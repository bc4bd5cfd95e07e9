"""One tool round of the chat loop: the model's calls run one at a time, each result joins
the history right after its call's turn (a call is never left without one), a runaway
loop of identical calls is steered then refused, and a tool that hands the work to the
user ends the turn after the round; the figures the round's tools made follow its results
as images, for a model that reads them (`tools._images`). The loop itself (`_loop`)
decides what happens next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine._events import ToolFinished, ToolStarted
from ..engine._output import output_cap
from ..engine._thresholds import Limits
from . import _texts as texts
from ._reply import call_signature
from ._session import Session
from ._settings import Settings
from .tools._images import images_message, take_figures
from .tools._tool import HandOver, Tool, run_tool

LOOP_WARN_AT = 3  # the third identical call in a row gets a steering note
Stop = tuple[str, str]  # (stop reason, the message said with the result)


@dataclass
class Repeats:
    """How often the latest call was made in a row, across the rounds of one turn."""

    last: str = ""
    count: int = 0

    def see(self, call: dict[str, Any]) -> int:
        signature = call_signature(call)
        self.count = self.count + 1 if signature == self.last else 1
        self.last = signature
        return self.count


def run_round(tools: dict[str, Tool], session: Session, limits: Limits[Settings],
              calls: list[dict[str, Any]], repeats: Repeats, *,
              images: bool = False) -> Stop | None:
    """Run one reply's tool calls in order, under the turn's `limits` (a result's cap is
    scaled to its window); returns why the turn stops after this round
    (a runaway loop, a hand-over), or None to go on. Once a stop is known, the remaining
    calls are answered "not run" rather than run. With `images` (the model reads them),
    the figures the tools made join the history after the last result, as one message."""
    take_figures(session.events)  # attached since the last round (a run left behind)
    stop: Stop | None = None
    for call in calls:
        stop = run_call(tools, session, limits, call, repeats.see(call), stop)
    # after every call has its result: a message between a call and its result would
    # break the pair providers require
    figures = take_figures(session.events)
    message = images_message(figures) if images else None
    if message is not None:
        session.add(message)
    return stop


def run_call(tools: dict[str, Tool], session: Session, limits: Limits[Settings],
             call: dict[str, Any], repeats: int, stop: Stop | None) -> Stop | None:
    """Run one tool call (or refuse a runaway loop); its result always joins the history."""
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    session.events.emit(ToolStarted(call["id"], name, arguments))
    if repeats > LOOP_WARN_AT or stop is not None:
        output, ok, full = texts.NOT_RUN.format(count=repeats), False, 0
        stop = stop or ("loop", texts.LOOP.format(name=name, count=repeats))
    else:
        try:
            output, ok, full = run_tool(
                tools, name, arguments, call_id=call["id"],
                store=session.store, timeout=limits.settings.tool_timeout_s,
                default_cap=output_cap(limits.settings.tool_output_max_chars,
                                       limits.thresholds.scale))
        except HandOver as handed:  # the user took the work: the turn ends here
            output, ok, full = handed.result, True, len(handed.result)
            stop = stop or ("handed_over", texts.HANDED_OVER)
        if repeats == LOOP_WARN_AT:
            output += texts.STEER.format(name=name)
    session.add({"role": "tool", "tool_call_id": call["id"], "content": output})
    session.events.emit(ToolFinished(call["id"], name, ok, len(output),
                                     max(full, len(output)), output[:1_000]))
    return stop
