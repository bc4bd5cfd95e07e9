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
from ..engine._thresholds import Limits
from ..engine._tokens import REPLY_PRIMING, count_tools_tokens, estimate_tokens
from ..engine._tracker import Truncation
from . import _texts as texts
from ._session import Session
from ._settings import Settings
from ._tool_sizes import TOOLS_SHARE
from .models._llm import Completion
from .models._local_runtimes import context_settings
from .providers._errors import is_stop_reason_overflow

NO_LIMITS: tuple[None, None] = (None, None)  # an overflow that states no numbers


def blocked_message(session: Session,
                    tool_schemas: Callable[[], list[dict[str, Any]]],
                    limits: Limits[Settings] | None = None) -> str | None:
    """At the blocking limit with nothing left to shrink (under `limits`, the turn's: by
    default the limits now): why the turn stops before sending, naming what fills the
    window (a pin, the system prompt, the tools, the latest message, a tool output). None
    below the limit. Compaction makes room down to the latest round (the last resort, L4
    room), so past the fixed parts it is that round that does not fit beside them."""
    state = session.context_state(limits)
    if state.level != "blocking":
        return None
    history, count = session.history, session.tracker.count_text
    preamble = history.preamble.stop
    tools = count_tools_tokens(tool_schemas(), count or estimate_tokens)
    fixed = sum(history.message_tokens(i) for i in range(preamble)) + tools
    at = state.thresholds
    if fixed >= at.blocking:
        parts = texts.fixed_parts(history.messages, preamble, tools, session.pins,
                                  count or estimate_tokens, history.message_tokens)
        return texts.blocked_by_fixed(parts, fixed, at.blocking, at.window.raw_window,
                                      state.window_source)
    rounds = history.rounds()
    if rounds:  # what must go with this request whatever compaction does: the latest round
        latest = rounds[-1]
        own = sum(history.message_tokens(i) for i in range(latest.start, latest.stop))
        # our counts as the request is counted (the tracker's calibration)
        scale = state.tokens / max(1, history.estimated_tokens + tools)
        if (fixed + own) * scale >= at.blocking:
            return texts.blocked_by_message(
                round((fixed + own) * scale), round(own * scale), at.blocking,
                at.window.raw_window, state.window_source,
                with_results=latest.stop - latest.start > 1)
    largest = texts.largest_message(history.messages, preamble, history.message_tokens)
    return texts.blocked_conversation(state.tokens, at.effective_window, largest,
                                      history.messages, automatic=at.auto_compact_enabled)


def window_ran_out(completion: Completion, limits: Limits[Settings]) -> bool:
    """A successful reply whose stop reason (or usage) says the window (`limits`') was
    exhausted."""
    usage = completion.usage
    return is_stop_reason_overflow(
        completion.finish_reason,
        prompt_tokens=usage.context_tokens if usage else None,
        completion_tokens=usage.output_tokens if usage else None,
        window=limits.window.raw_window)


def drop_after_cut(session: Session, limits: Limits[Settings] | None = None) -> Decision:
    """After a reply cut because the context window ran out: its tool calls answered, not
    run (their arguments may be cut too), and the oldest rounds dropped (no limit is
    known), under `limits` (the turn's). Returns that compaction's decision."""
    for call_id in session.history.pending_tool_calls:
        session.add({"role": "tool", "tool_call_id": call_id, "content": texts.CUT_CALL})
    return session.controller.handle_ptl_error(session.history, NO_LIMITS, limits)


def front_cut(session: Session, cut: Truncation, *, asked_again: bool,
              tools: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """The server answered a prompt it did not read whole (Ollama past its context length:
    200 OK, the usage the only sign). A reading believed is a cut: keep within what the
    server has shown it holds from now on (the session's learned window), say so once a
    session, and ask again once, after the compaction at the top of the loop; a reply to
    a prompt cut again is kept, marked. A reading not believed — far under what the
    server read at once before (its usage counts part of the prompt: from then on no
    window is learned from it, and one learned so is taken back), or a window that
    cannot hold the system prompt, the tools (`tools`, as offered) and the latest
    message — learns nothing: the reply stands and the session says once what the
    server reported and what to set. Returns the notices to say with the turn's result
    and whether to ask again."""
    if session.usage_partial:  # its usage counts part of a prompt: no cut is read from it
        return [], False
    settings = context_settings(_larger_window(session, cut.bound))
    if cut.contradicts:
        taken = session.distrust_usage()
        now = session.window()
        return session.say_once("usage", texts.USAGE_PARTIAL.format(
            read=figures.tokens(cut.read), sent=figures.count(cut.sent),
            held=figures.count(cut.held), window=figures.count(now.raw_window),
            source=now.source, settings=settings) + (texts.TAKEN_BACK if taken else "")), False
    before = session.window()
    bound = cut.window_bound(session.learned_window)
    needs = _needs(session, tools, bound)
    if not session.learn_window(bound, needs=needs, cut=True):
        return session.say_once("small", texts.CUT_TOO_SMALL.format(
            read=figures.count(cut.read), sent=figures.tokens(cut.sent),
            bound=figures.tokens(bound), needs=figures.count(needs),
            window=figures.count(before.raw_window), source=before.source,
            settings=settings)), False
    window = session.window().raw_window
    notices = session.say_once("cut", texts.FRONT_CUT.format(
        read=figures.count(cut.read), sent=figures.tokens(cut.sent),
        window=figures.tokens(window), settings=settings))
    if asked_again:
        notices.append(texts.FRONT_CUT_AGAIN.format(read=figures.count(cut.read),
                                                    sent=figures.tokens(cut.sent),
                                                    window=figures.tokens(window)))
        return notices, False
    # the same event as a retried stream: a display clears what streamed so far
    session.events.emit(Retrying(1, 0.0, texts.FRONT_CUT_RETRY))
    return notices, True


def _needs(session: Session, tools: list[dict[str, Any]], window: int) -> int:
    """What every request needs whatever compaction does — the preamble (system prompt,
    pins), the tools and the latest round — counted as a request is, with the tools as
    a window of `window` tokens would offer them (at most `TOOLS_SHARE` of it)."""
    history, tracker = session.history, session.tracker
    rounds = history.rounds()
    start = rounds[-1].start if rounds else len(history)
    own = sum(history.message_tokens(i) for i in range(history.preamble.stop)) + sum(
        history.message_tokens(i) for i in range(start, len(history)))
    offered = session.answers.model.tools_tokens(tools, tracker.count_text)
    effective = session.answers.model.limits(window).thresholds.effective_window
    shown = min(offered, round(TOOLS_SHARE * effective))
    return round(tracker.ratio(session.answers.name()) * (own + shown)) + REPLY_PRIMING


def _larger_window(session: Session, bound: int) -> int:
    """The window to suggest setting on the server: the one nbagent was told or assumed,
    when it is larger than what the server holds, else twice that (a multiple of 1,024)."""
    told = session.answers.model.resolve_window(None).raw_window
    return told if told > bound else -(-2 * bound // 1024) * 1024
