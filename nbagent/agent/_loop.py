"""The chat loop, as plain functions over an agent's configuration and its session:
compact at the turn boundary → call the model (recovering from "prompt too long") →
run the tools (one round: `_tool_round`) → compact mid-loop → repeat until the model
answers without tool calls or a limit stops it (where the window stops it:
`_window_stops`). Whatever ends a turn early leaves a valid history.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..engine._decision import Decision
from ..engine._events import Status
from ..engine._exceptions import ModelCallError, NbagentError
from ..engine._markers import is_images
from ..engine._thresholds import Limits
from ..engine.compaction import notebook_note
from . import _texts as texts
from ._model_traits import may_cut_silently, sees_images
from ._reply import repair_reply
from ._request import CacheMemory, context_block, with_context
from ._session import Session
from ._settings import Settings
from ._tool_round import Repeats, run_round
from ._window_stops import blocked_message, drop_after_cut, front_cut, window_ran_out
from .models._call import RetryPolicy, call_model
from .models._llm import ChatModel, Completion, takes_notes
from .providers._errors import classify_error
from .providers._limits import parse_token_limits
from .tools._images import without_images
from .tools._tool import Tool

__all__ = ["INTERRUPTED", "ChatResult", "Configured", "repair_reply", "run_chat",
           "with_context"]

MAX_OVERFLOW_RECOVERIES = 2
INTERRUPTED = texts.INTERRUPTED
StopReason = str  # done, max_rounds, loop, timeout, blocked, overflow, handed_over


@dataclass
class ChatResult:
    """How one chat ended: the final text, and, when a limit stopped it, why.

    `truncated`: the reply hit the model's output cap and was cut. `cost`: what this
    turn's model requests cost (litellm's prices, or the model's own). `replaced`: the chat
    re-ran an exchange (a notebook cell) and replaced what it had said before.
    """

    text: str
    stop_reason: StopReason = "done"
    stop_message: str | None = None
    rounds: int = 0
    cost: float = 0.0
    decisions: list[Decision] = field(default_factory=list)
    truncated: bool = False
    replaced: bool = False

    def __str__(self) -> str:
        return self.text if self.stop_message is None else f"{self.text}\n\n{self.stop_message}"


class Configured(Protocol):
    """What the loop needs of an agent's configuration."""

    model: ChatModel
    retry: RetryPolicy

    @property
    def tools(self) -> dict[str, Tool]: ...

    def settings(self) -> Settings: ...

    def tool_schemas(self, limits: Limits[Settings] | None = None) -> list[dict[str, Any]]: ...

    def notebook_state(self, limits: Limits[Settings] | None = None) -> str | None: ...


def run_chat(agent: Configured, session: Session, text: str, *,
             on_text: Callable[[str], None] | None = None,
             tool_choice: str | None = None, exchange: str | None = None) -> ChatResult:
    """One user turn, start to finish; one turn at a time per session."""
    limits = session.limits()  # the turn's one snapshot, from the meter's first reading on
    with session.turn(limits):
        turn = _Turn(agent, session, on_text, limits)
        try:
            return turn.run(text, tool_choice, exchange)
        except BaseException as stop:  # an interrupt, SystemExit, a hook's error, a failure
            turn.close(stop)
            raise


class _Turn:
    """The state of one turn: what it spent, what it decided, what streamed so far, and the
    limits it works under (`limits`: the settings, the window and its thresholds, asked
    once and passed to everything the turn does; asked again only where the turn itself
    changes the window, a limit the server showed: `relimit`)."""

    def __init__(self, agent: Configured, session: Session,
                 on_text: Callable[[str], None] | None, limits: Limits[Settings]) -> None:
        self.agent, self.session = agent, session
        self.limits = limits
        self.settings = self.limits.settings
        # at a provider whose prompt cache counts, the notebook context is a note in the
        # history (`_add_notebook_note`); other models get it on each request (`request`)
        self.noted = self.settings.notebook_context and takes_notes(agent.model)
        self.images = sees_images(agent.model)  # figures reach the model as images too
        self.started = time.monotonic()
        self.cost_before = session.cost
        self.decisions: list[Decision] = []
        self.rounds = 0
        self.streamed: list[str] = []
        self.replaced = False
        self.asked_again = False  # after a server dropped the front of the prompt
        self.notices: list[str] = []  # said with the result (`front_cut`)
        self._on_text = on_text

    def relimit(self) -> None:
        """The session learned (or took back) a window: work under the new limits."""
        self.limits = self.session.limits()
        self.settings = self.limits.settings

    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas offered under the turn's limits."""
        return self.agent.tool_schemas(self.limits)

    def status(self, text: str) -> None:
        self.session.events.emit(Status(text))

    def on_text(self, delta: str) -> None:
        self.streamed.append(delta)
        if self._on_text is not None:
            self._on_text(delta)

    def result(self, reply: str, reason: str = "done", message: str | None = None, *,
               truncated: bool = False) -> ChatResult:
        asked = self.session.asked_compaction.take()  # the model asked in this turn
        if asked is not None:  # at the turn's end, as `%compact` runs: shown, and undoable
            # until the next message joins (nothing is added after it in this turn)
            self._note(self.session.controller.compact_now(
                self.session.history, focus=asked or None, limits=self.limits))
        self.session.announce_state(self.limits)
        message = "\n\n".join(filter(None, [message, *self.notices])) or None
        return ChatResult(reply, reason, message, self.rounds,
                          self.session.cost - self.cost_before, self.decisions, truncated,
                          self.replaced)

    def run(self, text: str, tool_choice: str | None, exchange: str | None) -> ChatResult:
        session, controller = self.session, self.session.controller
        self.replaced = bool(session.open_exchange(exchange, text))
        repeats = Repeats()  # identical calls in a row, counted across the turn's rounds
        while True:
            self._note(controller.maybe_compact(session.history, self.limits))
            self._add_notebook_note()
            blocked = blocked_message(session, self.tools, self.limits)
            if blocked is not None:
                return self.result("", "blocked", blocked)
            self.streamed = []
            completion = self.request(tool_choice if self.rounds == 0 else None)
            message = self.record(completion)
            if message is None:  # the server cut the prompt: compact at the top, ask again
                continue
            calls = message.get("tool_calls") or []
            reply = str(message.get("content") or "")
            if window_ran_out(completion, self.limits):  # drop old rounds and say so
                self._note(drop_after_cut(session, self.limits))
                return self.result(reply, "overflow", texts.RAN_OUT, truncated=True)
            if not calls:
                return self.result(reply, truncated=completion.finish_reason == "length")
            self.rounds += 1
            stop = run_round(self.agent.tools, session, self.limits, calls, repeats,
                             images=self.images)
            self._note(controller.on_tool_result(session.history, self.limits))
            session.announce_state(self.limits)
            if stop is not None:
                return self.result(reply, *stop)
            if self.rounds >= self.settings.max_tool_rounds:
                return self.result(reply, "max_rounds",
                                   texts.MAX_ROUNDS.format(rounds=self.rounds))
            if time.monotonic() - self.started > self.settings.max_chat_seconds:
                return self.result(reply, "timeout", texts.TIMEOUT.format(
                    seconds=self.settings.max_chat_seconds))

    def _add_notebook_note(self) -> None:
        """At a provider whose prompt cache counts (`takes_notes`), the notebook context
        joins the history as a note when the variables changed since the latest one (or
        the latest left the history): sent once, read from the cache after that. Other
        models get it with each request instead (`request`). After a round's figures it
        waits a request: a note there would be a second user message in a row, which some
        providers' chat templates refuse (litellm joins them for Anthropic and Bedrock)."""
        history = self.session.history
        if self.noted and not (len(history) and is_images(history[-1])):
            note = notebook_note(history.messages, self.agent.notebook_state(self.limits))
            if note is not None:
                self.session.add(note)

    def _note(self, decision: Decision) -> None:
        if decision.action in ("compacted", "failed"):
            self.decisions.append(decision)

    def request(self, tool_choice: str | None) -> Completion:
        """One model request; on "prompt too long", drop the oldest rounds (L4) and retry,
        at most twice; then give up with an actionable message."""
        agent, session = self.agent, self.session
        context = agent.notebook_state(self.limits) if self.settings.notebook_context and \
            not self.noted else None
        caching = self.settings.prompt_caching
        for attempt in range(MAX_OVERFLOW_RECOVERIES + 1):
            session.history.check_ready()
            self.status("thinking…")
            tools = self.tools()
            messages = with_context(session.history.messages, context)
            if not self.images and session.history.has_images:  # figures sent to an earlier
                # model, as their cleared text
                messages = without_images(messages)
            plan = CacheMemory.plan(session, tools, enabled=caching)
            choice = _tool_choice(tool_choice)
            # the meter reads the request while it is sent, and no later figure of the turn
            # falls under it (`Session.reading`)
            added = context_block(context) if context else ""
            session.announce_state(self.limits, sent=session.answers.model.count_sent(
                session.history, messages, added, choice, session.tracker, self.limits))
            try:
                return call_model(agent.model, messages, tools,
                                  on_text=self.on_text if self._on_text else None,
                                  policy=agent.retry, tool_choice=choice,
                                  events=session.events, plan=plan)
            except NbagentError:  # already says what to do (the local model's own failures)
                raise
            except Exception as error:
                kind = classify_error(error)
                if kind == "overflow":  # the agent reads the text; L4 takes the numbers
                    stated = parse_token_limits(str(error))
                    if session.learn_window(stated[1]):
                        self.relimit()
                    if attempt < MAX_OVERFLOW_RECOVERIES:
                        self._note(session.controller.handle_ptl_error(
                            session.history, stated, self.limits))
                        self._add_notebook_note()  # if the dropped rounds held the latest
                        continue
                raise ModelCallError(kind, texts.failure_message(
                    agent.model.name, kind, error, self.limits.window, agent.retry.max_attempts,
                    MAX_OVERFLOW_RECOVERIES)) from error
        raise AssertionError("unreachable")

    def record(self, completion: Completion) -> dict[str, Any] | None:
        """Add the model's reply to the history, repaired into a valid message; None
        (nothing added) when the server read only part of the prompt and the reply is
        to be asked again (`front_cut`)."""
        session = self.session
        cut = None
        if completion.usage is not None:
            cut = session.tracker.record_usage(session.history, completion.usage,
                                               model=self.agent.model.name,
                                               tools=self.tools(),
                                               may_cut=may_cut_silently(self.agent.model))
        session.bill(completion)
        if cut is not None:
            notices, ask_again = front_cut(session, cut, asked_again=self.asked_again,
                                           tools=self.tools())
            self.relimit()  # a window learned, or one taken back
            self.notices += notices
            if ask_again:
                self.asked_again = True
                self.streamed = []
                return None
        message = repair_reply(completion.message, session.history.call_ids(),
                               len(session.history))
        session.add(message)
        self.streamed = []
        session.announce_state(self.limits)
        return message

    def close(self, stop: BaseException) -> None:
        """After an early end: keep what streamed, answer every open tool call."""
        history = self.session.history
        try:
            self.session.resync_archive()
            if self.streamed and history[-1]["role"] != "assistant" and not \
                    history.pending_tool_calls:
                self.session.add({"role": "assistant",
                                  "content": "".join(self.streamed) + " [interrupted]"})
            for call_id in history.pending_tool_calls:
                reason = (texts.INTERRUPTED if isinstance(stop, (KeyboardInterrupt, SystemExit,
                                                           GeneratorExit))
                          else f"Not finished: the turn ended early ({type(stop).__name__}).")
                self.session.add({"role": "tool", "tool_call_id": call_id, "content": reason})
            self.session.announce_state(self.limits)
        except Exception:  # the repair must never hide the original stop
            pass


def _tool_choice(choice: str | None) -> str | dict[str, Any] | None:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}
