"""Where the window stops a turn, as plain functions the loop calls: the blocking limit
with nothing left to shrink (`blocked_message`: what fills the window, before anything is
sent), a reply whose stop reason says the window ran out (`window_ran_out`, `drop_after_cut`)
and a prompt the server cut at its front (`front_cut`: keep within what it reads, ask again
once). The turn itself is `_loop`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine import _figures as figures
from ..engine._decision import Decision
from ..engine._events import Retrying
from ..engine._tokens import count_tools_tokens, estimate_tokens
from ..engine._tracker import Truncation
from . import _texts as texts
from ._session import Session
from .models._llm import Completion
from .providers._errors import is_stop_reason_overflow

NO_LIMITS: tuple[None, None] = (None, None)  # an overflow that states no numbers


def blocked_message(session: Session,
                    tool_schemas: Callable[[], list[dict[str, Any]]]) -> str | None:
    """At the blocking limit with nothing left to shrink: why the turn stops before
    sending, naming what fills the window (a pin, the system prompt, the tools, a tool
    output). None below the limit."""
    state = session.context_state()
    if state.level != "blocking":
        return None
    history, count = session.history, session.tracker.count_text
    preamble = history.preamble.stop
    tools = count_tools_tokens(tool_schemas(), count or estimate_tokens)
    fixed = sum(history.message_tokens(i) for i in range(preamble)) + tools
    limits = state.thresholds
    if fixed >= limits.blocking:
        parts = texts.fixed_parts(history.messages, preamble, tools, session.pins,
                                  count or estimate_tokens, history.message_tokens)
        return texts.blocked_by_fixed(parts, fixed, limits.blocking, limits.window.raw_window,
                                      state.window_source)
    largest = texts.largest_message(history.messages, preamble, history.message_tokens)
    return texts.blocked_conversation(state.tokens, limits.effective_window, largest,
                                      history.messages, automatic=limits.auto_compact_enabled)


def window_ran_out(session: Session, completion: Completion) -> bool:
    """A successful reply whose stop reason (or usage) says the window was exhausted."""
    usage = completion.usage
    return is_stop_reason_overflow(
        completion.finish_reason,
        prompt_tokens=usage.context_tokens if usage else None,
        completion_tokens=usage.output_tokens if usage else None,
        window=session.window().raw_window)


def drop_after_cut(session: Session) -> Decision:
    """After a reply cut because the context window ran out: its tool calls answered, not
    run (their arguments may be cut too), and the oldest rounds dropped (no limit is
    known). Returns that compaction's decision."""
    for call_id in session.history.pending_tool_calls:
        session.add({"role": "tool", "tool_call_id": call_id, "content": texts.CUT_CALL})
    return session.controller.handle_ptl_error(session.history, NO_LIMITS)


def front_cut(session: Session, cut: Truncation, *, asked_again: bool) -> tuple[list[str], bool]:
    """The server answered a prompt it cut at the front (Ollama past its context length:
    200 OK, the usage the only sign). Keep within what it can read from now on (the
    session's learned window), say so once a session, and ask again once, after the
    compaction at the top of the loop; a reply to a prompt cut again is kept, marked.
    Returns the notices to say with the turn's result and whether to ask again."""
    session.learn_window(cut.window_bound(session.learned_window,
                                          again=session.tracker.truncations > 1))
    window = session.window().raw_window
    notices = []
    if session.tracker.truncations == 1:
        notices.append(texts.FRONT_CUT.format(read=figures.count(cut.read),
                                              sent=figures.tokens(cut.sent),
                                              window=figures.tokens(window)))
    if asked_again:
        notices.append(texts.FRONT_CUT_AGAIN.format(read=figures.count(cut.read),
                                                    sent=figures.tokens(cut.sent),
                                                    window=figures.tokens(window)))
        return notices, False
    # the same event as a retried stream: a display clears what streamed so far
    session.events.emit(Retrying(1, 0.0, texts.FRONT_CUT_RETRY))
    return notices, True
