"""What the agent room tells the user: the first-run notice, the default system prompt, and
what the chat loop says when it stops early or a model call fails for good:
what happened, its real cause (a pin, a tool output, the system prompt, the tool schemas,
the model's window) and the Python call that fixes it. The notebook layer adds the magic
spellings; nothing here names one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine import _figures as figures
from ..engine._markers import is_block, is_pins
from ..engine._window import WindowInfo
from .archive._redact import redact
from .providers._errors import auth_hint

LOADING_PROVIDER = "loading the provider library (litellm), once per kernel…"
NOTICE = ("answers come from the embedded SmolLM2-135M, a very small model (no API key, no "
          "network); agent.use_model(NAME) picks any litellm model")
# what the first chat in a notebook says about the conversation it is in
CONTINUING = ("continuing this notebook's conversation ({turns} user messages, session "
              "{session}{was}); start fresh with nbagent.new_session()")
COPY = ("a new conversation: this notebook is a copy of {original}, which keeps its "
        "conversation (session {session}); to continue that one here instead: "
        "nbagent.current(resume='{session}')")
HELD = ("a new conversation: this notebook's conversation (session {session}) is open in "
        "another kernel; to continue it here, shut that kernel down, then: "
        "nbagent.current(resume='{session}')")
DEFAULT_SYSTEM = (
    "You are a data-science assistant working inside the user's Jupyter notebook. Use the "
    "tools to look at their variables and files before answering; quote exact names; keep "
    "answers short and concrete."
)
STEER = (
    "\n\n[nbagent: this is the third identical {name} call in a row and it returns the "
    "same thing. Change the arguments, try another tool, or answer with what you have.]"
)
NOT_RUN = "Not run: the same call was repeated {count} times in a row; the chat was stopped."
INTERRUPTED = "Interrupted: this tool call did not finish (the user stopped the turn)."
CUT_CALL = "Not run: the reply was cut when the context window ran out."
RAN_OUT = ("The reply was cut: the context window ran out. The oldest rounds were dropped "
           "from what the model sees (they stay in the archive; recall finds them); ask it "
           "to continue.")
# {read}, {sent}, {window}: figures written by `_figures` (`count`, `tokens`, `tokens`)
FRONT_CUT = ("The server read only {read} of the {sent} sent and answered anyway: it "
             "dropped the front of the prompt (the system prompt, the tools, the first "
             "request) without an error, as Ollama and llama.cpp do past their context length. "
             "This session now keeps within {window}, the most the server has read "
             "at once (compacting, then asking again). For more room, raise the server's "
             "context length ({settings}), then start a new session (agent.new_session()).")
FRONT_CUT_AGAIN = ("The server dropped the front of the prompt again (it read {read} of "
                   "{sent}): this answer was written without the start of the "
                   "conversation. Ask again; the session now keeps within {window}.")
USAGE_PARTIAL = ("The server reported reading {read} of a {sent}-token request, "
                 "though it read {held} at once before: its usage counts only part of the "
                 "prompt (some Ollama versions count only the tokens not already in their "
                 "cache), so it is not taken for a cut, and the session keeps its window "
                 "({window}, from {source}). If the server's window is smaller than that, "
                 "say so: agent.configure(max_context_tokens=N), or raise it ({settings}).")
TAKEN_BACK = (" The window learned earlier from its usage is taken back: what it read was "
              "not the whole prompt.")
CUT_TOO_SMALL = ("The server reported reading only {read} of the {sent} sent. A "
                 "window of {bound} cannot hold what every request needs now (the "
                 "system prompt, the tools and the latest message: about {needs}), so it is "
                 "not taken for the server's window and the session keeps its own "
                 "({window}, from {source}). Either the server's usage counts only part of "
                 "the prompt (some Ollama versions count only uncached tokens), or its window "
                 "really is that small: then raise it ({settings}), or tell nbagent its real "
                 "window: agent.configure(max_context_tokens=N).")
FRONT_CUT_RETRY = "the server dropped the front of the prompt; compacting and asking again"
MAX_ROUNDS = "Stopped after {rounds} rounds of tool calls (NBAGENT_MAX_TOOL_ROUNDS)."
TIMEOUT = "Stopped after {seconds:g} s (NBAGENT_MAX_CHAT_SECONDS)."
LOOP = "Stopped: {name} was called {count} times in a row with the same arguments."
HANDED_OVER = ("The code is in a new cell below, for you to edit and run; the next chat "
               "sees what it printed.")
# The compaction the model asks for (`compact_context`): its answers to the model.
ASKED_COMPACTION_TAKEN = (
    "Compaction requested: it runs when this turn ends, after your answer (the user sees it "
    "and can undo it). Older turns become a summary that keeps what the focus names; the "
    "archive keeps every message (recall finds them).")
ASKED_COMPACTION_PENDING = "Already requested: the compaction runs when this turn ends."
ASKED_COMPACTION_TOO_SOON = (
    "Not compacted: the conversation was compacted at your request {ago}; at most once in "
    "{every} of the user's turns. Go on; automatic compaction still runs when the window "
    "fills.")
ASKED_COMPACTION_OFF = "Not compacted: compaction is off in this session (the user's setting)."
# A delegated task (a branch): its own system prompt, the task as it is handed over, and
# what returns to the main history.
BRANCH_SYSTEM = (
    "You work on one bounded task for another assistant, inside the user's Jupyter "
    "notebook, with the same tools it has. Read what the task needs (page through big "
    "files, describe variables, run short code) and then stop. Your final reply is all the "
    "other assistant will see: a short report (at most about 300 words) that answers the "
    "task with the exact names (files, columns, variables, errors) and numbers you found, "
    "and says what you could not find. No raw dumps.")
BRANCH_TASK = "Task: {task}"
BRANCH_DATA = "The data it concerns:\n{briefing}"
BRANCH_REPORT_NOW = (
    "Stop here ({why}). Reply now with your report of what you found so far: the exact "
    "names and numbers, and what is still open.")
BRANCH_HEAD = ("[delegated task {number} ({status}): {rounds} round(s), {calls} tool "
               "call(s) with {model}; its own window took in {transcript}, kept out "
               "of this one; every step is in the session archive (recall finds it)]")
BRANCH_CUT = ("\n… (the report was cut at {shown:,} of {total:,} characters; recall finds "
              "the whole of it)")
BRANCH_FAILED = "The delegated task failed: {error}"
BRANCH_EMPTY = "(the delegated task ended without a report)"
FAILURES = {  # what to tell the user when a model call failed for good, by error kind
    "quota": "{name}: the account's quota or credit is used up ({detail}). Add credit or "
             "choose another model; retrying will not help.",
    "request_too_large": "{name}: this one request is larger than the account's "
                         "tokens-per-minute limit ({detail}). Run agent.compact(), or use a "
                         "model or tier with a higher limit.",
    "transient": "{name} kept failing after {attempts} attempts ({detail}); the provider may "
                 "be down. Try again shortly.",
    "rate_limit": "{name} is still rate-limiting after {attempts} attempts ({detail}). Wait a "
                  "minute and run the cell again.",
}
WINDOW_FIX = ("choose a model with a bigger window (or set its real one: "
              "agent.configure(max_context_tokens=N))")


@dataclass(frozen=True)
class Part:
    """One thing that fills the window: what it is, its size, and the call that shrinks it."""

    what: str
    tokens: int
    fix: str


def fixed_parts(messages: Sequence[dict[str, Any]], preamble: int, tool_tokens: int,
                pins: Sequence[str], count: Callable[[str], int],
                message_tokens: Callable[[int], int]) -> list[Part]:
    """What every request carries whatever the conversation: the system prompt, each pin,
    the tool schemas — largest first."""
    parts: list[Part] = []
    for index in range(preamble):
        if is_pins(messages[index]):
            parts += [Part(f"pin {i} ({pin[:40]!r}{'…' if len(pin) > 40 else ''})", count(pin),
                           f"agent.unpin({i})") for i, pin in enumerate(pins)]
        else:
            parts.append(Part("the system prompt", message_tokens(index),
                              "a shorter system prompt (Agent(system=...))"))
    if tool_tokens:
        parts.append(Part("the tool schemas", tool_tokens,
                          "fewer tools (nbagent.new_session(builtin_tools=False))"))
    return sorted(parts, key=lambda part: -part.tokens)


def blocked_by_fixed(parts: Sequence[Part], fixed: int, blocking: int, window: int,
                     source: str) -> str:
    """Stopped before sending: what every request carries is already too big."""
    pinned = any(p.what.startswith("pin ") for p in parts)
    subject = ("the pins, the system prompt and the tool schemas" if pinned
               else "the system prompt and the tool schemas")
    named = "; ".join(f"{p.what} ≈{figures.count(p.tokens)}" for p in parts[:3] if p.tokens)
    fixes = " or ".join(dict.fromkeys(p.fix for p in parts[:2] if p.tokens))
    return (f"Not sent: {subject} alone take about {figures.tokens(fixed)} ({named}), more "
            f"than the {figures.count(blocking)} this model's window ({figures.count(window)}, "
            f"from {source}) leaves for a "
            f"conversation. Use {fixes}, or {WINDOW_FIX}.")


def blocked_by_message(needed: int, message: int, blocking: int, window: int, source: str,
                       *, with_results: bool = False) -> str:
    """Stopped before sending: the system prompt, the tools and the latest message (with
    its tool results so far) cannot fit together, whatever compaction folds."""
    what = "this message and its tool results" if with_results else "this message"
    return (f"Not sent: the system prompt, the tools and {what} take about "
            f"{figures.tokens(needed)} together ({what} ≈{figures.count(message)}), more "
            f"than the {figures.count(blocking)} this model's "
            f"window ({window}, from {source}) leaves for a request; everything older was "
            f"folded already. Send a shorter message (or put the data in a variable and ask "
            f"about it by name), or {WINDOW_FIX}.")


def largest_message(messages: Sequence[dict[str, Any]], start: int,
                    message_tokens: Callable[[int], int]) -> tuple[int, int] | None:
    """The index and size of the largest message after the preamble (None if none)."""
    sizes = [(message_tokens(i), i) for i in range(start, len(messages))
             if not is_block(messages[i])]
    if not sizes:
        return None
    tokens, index = max(sizes)
    return index, tokens


# the largest part of a conversation, by role, with its article ("an assistant message")
_PARTS = {"tool": "a tool output", "assistant": "an assistant message", "user": "a user message"}


SHRINK = {True: "automatic compaction could not shrink it",
          False: "automatic compaction is off (NBAGENT_DISABLE_COMPACT)"}


def blocked_conversation(tokens: int, effective: int, largest: tuple[int, int] | None,
                         messages: Sequence[dict[str, Any]], *, automatic: bool = True) -> str:
    cause = ""
    if largest is not None and largest[1] * 3 >= tokens:
        index, size = largest
        role = messages[index].get("role")
        what = _PARTS.get(str(role), f"a {role} message")
        cause = f" The largest part is {what} (message {index}, about {figures.tokens(size)})."
    return (f"Not sent: the conversation fills {figures.count(tokens)} of the "
            f"{figures.tokens(effective)} this "
            f"model can take (its effective window), and {SHRINK[automatic]}.{cause} Run "
            f"agent.compact() (add what must be kept), {WINDOW_FIX}, or "
            "agent.undo_compaction() to take the last compaction back.")


def failure_message(name: str, kind: str, error: BaseException, window: WindowInfo,
                    attempts: int, recoveries: int) -> str:
    """One model call failed for good: what happened and what to do, redacted."""
    first = str(error).splitlines()[0][:300] if str(error) else ""
    detail = f"{type(error).__name__}: {first}" if first else type(error).__name__
    if kind == "overflow":
        message = (
            f"The conversation no longer fits {name}'s context window "
            f"({figures.tokens(window.raw_window)}, from {window.source}), even after dropping "
            "the oldest rounds "
            f"{recoveries} times. Run agent.compact() (add what must be kept) or "
            f"{WINDOW_FIX}. The dropped rounds are gone only from what the model sees: the "
            "archive keeps every message (recall finds them).")
    elif kind == "auth":
        message = f"{auth_hint(name, error)} ({detail})"
    elif kind in FAILURES:
        message = FAILURES[kind].format(name=name, detail=detail, attempts=attempts)
    else:
        message = f"The call to {name} failed: {detail}"
    return redact(message)
