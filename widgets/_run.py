"""What each magic does once its line is read: one call into nbagent's public API and
the lines it shows (the meter from a chat's first moment, the reply, proposed cells,
compaction progress, `%context`). The magics module only parses and dispatches here.
Under a chat's reply this module adds no line of its own: it hands `ChatDisplay.finish`
the facts (a cell asked for, one proposed, the small model) and finish decides the lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbagent import Agent, NbagentError, current
from nbagent.text import count

from ._cells import CellProposals, last_code_block
from ._chat import ChatDisplay
from ._meter import MeterLine
from ._report import ProgressLine, show_breakdown, show_decision, show_error, show_text
from ._texts import CELL_REQUEST, INTERRUPTED_RETRY

ERRORS: dict[int, str] = {}  # execution count → the error that cell raised (for Err[n])


def chat(shell: Any, agent: Agent, typed: str, *, as_cell: bool, exchange: str | None) -> None:
    """One chat in this cell: the meter from the first moment, the reply as it streams,
    proposed code into a new cell below, and what happened in one line each."""
    meter_line(agent)
    view = ChatDisplay()
    proposals = CellProposals(shell)
    for subscriber in (view, proposals):
        agent.events.subscribe(subscriber)
    try:
        message = agent.expand_references(typed, errors=ERRORS)
        result = agent.chat(message + (CELL_REQUEST if as_cell else ""), on_text=view.on_text,
                            exchange=exchange)
    except KeyboardInterrupt:
        view.interrupted(INTERRUPTED_RETRY)
        return
    except NbagentError as error:
        view.error(str(error))
        return
    finally:
        # the line needs no reading here: the turn told it every change, its last the
        # turn's own figure (read again now, a count that fell within the turn would
        # lower it at the turn's end)
        for subscriber in (view, proposals):
            agent.events.unsubscribe(subscriber)
    if as_cell and proposals.code is None:  # the model's own proposal comes first
        code = last_code_block(result.text)
        if code is not None:
            proposals.propose(code)
    # The lines under the reply are all decided in ChatDisplay.finish; this passes the facts.
    # (in a terminal a proposal is shown as it is made, with its own words: no line here)
    view.finish(result, cell_asked=as_cell and proposals.code is None,
                proposed=proposals.below, small_model=agent.bundled_model)


SESSIONS_SHOWN = 20
SESSIONS_HEAD = ("nbagent: the sessions kept, last written first (%chat --resume N resumes "
                 "number N):")


def sessions() -> None:
    """`%chat --sessions`: the sessions kept, numbered as `--resume N` takes them."""
    import time

    from ._bundles import clean_cut

    listed = shown(Agent.sessions)
    if listed is None:
        return
    if not listed:
        text("nbagent: no session kept yet (the first chat starts one)")
        return
    this = getattr(shown(current), "session_id", None)
    day = time.strftime("%Y-%m-%d", time.localtime())
    lines = [SESSIONS_HEAD]
    for number, past in enumerate(listed[:SESSIONS_SHOWN], 1):
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(past.started))
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(past.last)).removeprefix(
            f"{day} ")
        asked = clean_cut(" ".join(past.first_request.split()), 60) if past.first_request \
            else "no request yet"
        where = past.notebook.rsplit("/", 1)[-1] if past.notebook else "(no notebook)"
        mark = "  ← this kernel's session" if past.id == this else ""
        lines.append(f"{number:>2}. {where} · started {started} · last {last} · “{asked}” · "
                     f"{past.id}{mark}")
    if len(listed) > SESSIONS_SHOWN:
        lines.append(f"… {len(listed) - SESSIONS_SHOWN} older, numbered {SESSIONS_SHOWN + 1} "
                     f"to {len(listed)}")
    text("\n".join(lines))


def show_help(magic: Callable[..., Any]) -> None:
    text(str(magic.__doc__ or "").strip())


def shown(call: Any, *, done: bool = False) -> Any:
    """Run `call`; an nbagent error is shown as one line instead of a traceback."""
    try:
        result = call()
    except NbagentError as error:
        show_error(str(error))
        return None
    return True if done and result is None else result


def text(words: str) -> None:
    show_text(words)


def notice(agent: Agent) -> None:
    taken = agent.take_notice()
    if taken:
        text(f"nbagent: {taken}")


def meter_line(agent: Agent) -> Any:
    """The session's meter line, shown in this cell: plain HTML and text updated in place
    by display id (every copy of it, in every cell), so a saved notebook shows it as is."""
    meter = MeterLine.follow(agent)
    meter.show()
    return meter


def compact(agent: Agent, focus: str | None) -> None:
    """Compact now, with the status lines of the compaction shown while it runs."""
    progress = ProgressLine()
    agent.events.subscribe(progress)
    try:
        decision = shown(lambda: agent.compact(focus))
    finally:
        agent.events.unsubscribe(progress)
        progress.clear()
    if decision is not None:
        show_decision(decision)
        meter_line(agent)


def last_decision(agent: Agent) -> Any:
    past = [d for d in agent.controller.decisions if d.action != "none" and d.changed]
    return past[-1] if past else None


def compactions(agent: Agent) -> None:
    past = [d for d in agent.controller.decisions if d.action != "none"]
    if not past:
        text("nbagent: no compaction yet in this session")
    for decision in past:
        show_decision(decision)


def context(agent: Agent) -> None:
    show_breakdown(agent.breakdown(), cost=agent.cost, billing=agent.billing(),
                   last=last_decision(agent), branches=agent.branches())
    mcp = agent.mcp_schema_tokens()
    if mcp:  # the MCP servers' share of the tool schemas row, by server
        text("of the tool schemas, MCP servers' tools: " + ", ".join(
            f"{server} {count(size)}" for server, size in mcp.items())
            + f" tokens ({count(sum(mcp.values()))} in all)")
