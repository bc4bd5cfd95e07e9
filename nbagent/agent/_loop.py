"""The chat loop, as plain functions over an agent's configuration and its session:
compact at the turn boundary → call the model (recovering from "prompt too long") →
run the tools → compact mid-loop → repeat until the model answers without tool calls
or a limit stops it. Whatever ends a turn early leaves a valid history.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..engine._decision import Decision
from ..engine._events import Status, ToolFinished, ToolStarted
from ..engine._exceptions import ModelCallError, NbagentError
from ..engine._markers import is_plain_user
from ..engine._output import output_cap
from ..engine._tokens import count_tools_tokens, estimate_tokens
from ..engine.compaction._limits import parse_token_limits
from ._session import Session
from ._settings import Settings
from .archive._redact import redact
from .models._llm import ChatModel, Completion, RetryPolicy, call_model
from .providers._errors import auth_hint, classify_error, is_stop_reason_overflow
from .tools._tool import Tool, run_tool

MAX_OVERFLOW_RECOVERIES = 2
LOOP_WARN_AT = 3  # the third identical call in a row gets a steering note
MAX_CALLS_PER_REPLY = 64
STEER = (
    "\n\n[nbagent: this is the third identical {name} call in a row and it returns the "
    "same thing. Change the arguments, try another tool, or answer with what you have.]"
)
NOT_RUN = "Not run: the same call was repeated {count} times in a row; the chat was stopped."
INTERRUPTED = "Interrupted: this tool call did not finish (the user stopped the turn)."
StopReason = str  # "done", "max_rounds", "loop", "timeout", "blocked", "overflow"
FAILURES = {  # what to tell the user when a model call failed for good, by error kind
    "quota": "{name}: the account's quota or credit is used up ({detail}). Add credit or "
             "choose another model; retrying will not help.",
    "request_too_large": "{name}: this one request is larger than the account's "
                         "tokens-per-minute limit ({detail}). Run %compact, or use a model or "
                         "tier with a higher limit.",
    "transient": "{name} kept failing after {attempts} attempts ({detail}); the provider may "
                 "be down. Try again shortly.",
    "rate_limit": "{name} is still rate-limiting after {attempts} attempts ({detail}). Wait a "
                  "minute and run the cell again.",
}


@dataclass
class ChatResult:
    """How one chat ended: the final text, and, when a limit stopped it, why.

    `truncated`: the reply hit the model's output cap and was cut.
    """

    text: str
    stop_reason: StopReason = "done"
    stop_message: str | None = None
    rounds: int = 0
    cost: float = 0.0
    decisions: list[Decision] = field(default_factory=list)
    truncated: bool = False

    def __str__(self) -> str:
        return self.text if self.stop_message is None else f"{self.text}\n\n{self.stop_message}"


class Configured(Protocol):
    """What the loop needs of an agent's configuration."""

    model: ChatModel
    tools: dict[str, Tool]
    retry: RetryPolicy

    def settings(self) -> Settings: ...

    def tool_schemas(self) -> list[dict[str, Any]]: ...

    def notebook_state(self) -> str | None: ...


def run_chat(agent: Configured, session: Session, text: str, *,
             on_text: Callable[[str], None] | None = None,
             tool_choice: str | None = None, exchange: str | None = None) -> ChatResult:
    """One user turn, start to finish; one turn at a time per session."""
    with session.turn():
        turn = _Turn(agent, session, on_text)
        try:
            return turn.run(text, tool_choice, exchange)
        except BaseException as stop:  # an interrupt, SystemExit, a hook's error, a failure
            turn.close(stop)
            raise


class _Turn:
    """The state of one turn: what it spent, what it decided, what streamed so far."""

    def __init__(self, agent: Configured, session: Session,
                 on_text: Callable[[str], None] | None) -> None:
        self.agent, self.session = agent, session
        self.settings = agent.settings()
        self.started = time.monotonic()
        self.cost_before = session.cost
        self.decisions: list[Decision] = []
        self.rounds = 0
        self.streamed: list[str] = []
        self._on_text = on_text

    def status(self, text: str) -> None:
        self.session.events.emit(Status(text))

    def on_text(self, delta: str) -> None:
        self.streamed.append(delta)
        if self._on_text is not None:
            self._on_text(delta)

    def result(self, reply: str, reason: str = "done", message: str | None = None, *,
               truncated: bool = False) -> ChatResult:
        self.session.announce_state()
        return ChatResult(reply, reason, message, self.rounds,
                          self.session.cost - self.cost_before, self.decisions, truncated)

    def run(self, text: str, tool_choice: str | None, exchange: str | None) -> ChatResult:
        session, controller = self.session, self.session.controller
        session.open_exchange(exchange, text)
        last_signature, repeats = "", 0
        while True:
            self._note(controller.maybe_compact(session.history))
            blocked = self._blocked()
            if blocked is not None:
                return blocked
            self.streamed = []
            completion = self.request(tool_choice if self.rounds == 0 else None)
            message = self.record(completion)
            calls = message.get("tool_calls") or []
            reply = str(message.get("content") or "")
            if self._window_ran_out(completion):
                return self._ran_out(reply)
            if not calls:
                return self.result(reply, truncated=completion.finish_reason == "length")
            self.rounds += 1
            stop: tuple[str, str] | None = None
            for call in calls:
                signature = _signature(call)
                repeats = repeats + 1 if signature == last_signature else 1
                last_signature = signature
                stop = self.run_call(call, repeats, stop)
            self._note(controller.on_tool_result(session.history))
            session.announce_state()
            if stop is not None:
                return self.result(reply, *stop)
            if self.rounds >= self.settings.max_tool_rounds:
                return self.result(reply, "max_rounds", f"Stopped after {self.rounds} rounds of "
                                   "tool calls (NBAGENT_MAX_TOOL_ROUNDS).")
            if time.monotonic() - self.started > self.settings.max_chat_seconds:
                return self.result(reply, "timeout", f"Stopped after "
                                   f"{self.settings.max_chat_seconds:g} s "
                                   "(NBAGENT_MAX_CHAT_SECONDS).")

    def _note(self, decision: Decision) -> None:
        if decision.action in ("compacted", "failed"):
            self.decisions.append(decision)

    def _blocked(self) -> ChatResult | None:
        """At the blocking limit with nothing left to shrink: stop before sending."""
        state = self.session.context_state()
        if state.level != "blocking":
            return None
        history = self.session.history
        fixed = (sum(history.message_tokens(i) for i in range(history.preamble.stop))
                 + count_tools_tokens(self.agent.tool_schemas(),
                                      self.session.tracker.count_text or estimate_tokens))
        if fixed >= state.thresholds.blocking:
            return self.result("", "blocked", (
                f"Not sent: the system prompt and the tool schemas alone take about {fixed:,} "
                f"tokens, more than the {state.thresholds.blocking:,} this model's window "
                f"({state.thresholds.window.raw_window:,}, from {state.window_source}) leaves "
                "for a conversation. Choose a model with a bigger window (or set its real one: "
                "%nbagent window=N), or offer fewer tools (%chat --new --no-tools)."))
        return self.result("", "blocked", (
            f"Not sent: the conversation fills {state.tokens:,} of the "
            f"{state.thresholds.effective_window:,} tokens this model can take, and automatic "
            "compaction could not shrink it. Run %compact (add what must be kept), choose a "
            "model with a bigger window, or %compact --undo the last compaction."))

    def _window_ran_out(self, completion: Completion) -> bool:
        """A successful reply whose stop reason (or usage) says the window was exhausted."""
        usage = completion.usage
        return is_stop_reason_overflow(
            completion.finish_reason,
            prompt_tokens=usage.context_tokens if usage else None,
            completion_tokens=usage.output_tokens if usage else None,
            window=self.session.window().raw_window)

    def _ran_out(self, reply: str) -> ChatResult:
        """A reply cut because the context window ran out: drop old rounds and say so.
        Tool calls in the cut reply are not run (their arguments may be cut too)."""
        for call_id in self.session.history.pending_tool_calls:
            self.session.add({"role": "tool", "tool_call_id": call_id,
                              "content": "Not run: the reply was cut when the context window "
                                         "ran out."})
        self._note(self.session.controller.handle_ptl_error(
            self.session.history, "the context window was exhausted during the reply"))
        return self.result(reply, "overflow", "The reply was cut: the context window ran out. "
                           "The oldest rounds were dropped from what the model sees (they stay "
                           "in the archive; recall finds them); ask it to continue.",
                           truncated=True)

    def request(self, tool_choice: str | None) -> Completion:
        """One model request; on "prompt too long", drop the oldest rounds (L4) and retry,
        at most twice; then give up with an actionable message."""
        agent, session = self.agent, self.session
        context = agent.notebook_state() if self.settings.notebook_context else None
        for attempt in range(MAX_OVERFLOW_RECOVERIES + 1):
            session.history.check_ready()
            self.status("thinking…")
            try:
                return call_model(agent.model, with_context(session.history.messages, context),
                                  agent.tool_schemas(),  # streamed only when someone watches
                                  on_text=self.on_text if self._on_text else None,
                                  policy=agent.retry,
                                  tool_choice=_tool_choice(tool_choice), events=session.events)
            except NbagentError:  # already says what to do (e.g. the local model's install)
                raise
            except Exception as error:
                kind = classify_error(error)
                if kind == "overflow":
                    session.learn_window(parse_token_limits(str(error))[1])
                    if attempt < MAX_OVERFLOW_RECOVERIES:
                        self._note(session.controller.handle_ptl_error(session.history, error))
                        continue
                raise ModelCallError(kind, _failure_message(agent, session, kind, error)
                                     ) from error
        raise AssertionError("unreachable")

    def record(self, completion: Completion) -> dict[str, Any]:
        """Add the model's reply to the history, repaired into a valid message."""
        session = self.session
        if completion.usage is not None:
            session.tracker.record_usage(session.history, completion.usage,
                                         model=self.agent.model.name,
                                         tools=self.agent.tool_schemas())
        session.cost += completion.cost or 0.0
        message = repair_reply(completion.message, session.history.call_ids(),
                               len(session.history))
        session.add(message)
        self.streamed = []
        session.announce_state()
        return message

    def run_call(self, call: dict[str, Any], repeats: int,
                 stop: tuple[str, str] | None) -> tuple[str, str] | None:
        """Run one tool call (or refuse a runaway loop); its result always joins the history."""
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        session = self.session
        session.events.emit(ToolStarted(call["id"], name, arguments))
        if repeats > LOOP_WARN_AT or stop is not None:
            output, ok, full = NOT_RUN.format(count=repeats), False, 0
            stop = stop or ("loop", f"Stopped: {name} was called {repeats} times in a row with "
                            "the same arguments.")
        else:
            output, ok, full = run_tool(
                self.agent.tools, name, arguments, call_id=call["id"], store=session.store,
                default_cap=output_cap(self.settings.tool_output_max_chars,
                                       session.controller.thresholds().scale),
                timeout=self.settings.tool_timeout_s)
            if repeats == LOOP_WARN_AT:
                output += STEER.format(name=name)
        session.add({"role": "tool", "tool_call_id": call["id"], "content": output})
        session.events.emit(ToolFinished(call["id"], name, ok, len(output),
                                         max(full, len(output)), output[:1_000]))
        return stop

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
                reason = (INTERRUPTED if isinstance(stop, (KeyboardInterrupt, SystemExit,
                                                           GeneratorExit))
                          else f"Not finished: the turn ended early ({type(stop).__name__}).")
                self.session.add({"role": "tool", "tool_call_id": call_id, "content": reason})
            self.session.announce_state()
        except Exception:  # the repair must never hide the original stop
            pass


def with_context(messages: list[dict[str, Any]], context: str | None) -> list[dict[str, Any]]:
    """The request with the notebook context appended to the latest plain user message
    only (a copy): the history never stores it and the cached prefix stays intact."""
    if not context:
        return messages
    for index in range(len(messages) - 1, 0, -1):
        if is_plain_user(messages[index]) and isinstance(messages[index].get("content"), str):
            message = messages[index]
            sent = {**message, "content": f"{message['content']}\n\n[{context}]"}
            return [*messages[:index], sent, *messages[index + 1:]]
    return messages


def _tool_choice(choice: str | None) -> str | dict[str, Any] | None:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def repair_reply(message: dict[str, Any], taken: AbstractSet[str], position: int
                 ) -> dict[str, Any]:
    """Model output is untrusted input: give every tool call a fresh, unique id, a string
    name and arguments that parse as a JSON object (else they are kept as text inside
    one), so the history stays valid whatever the model sent."""
    message = {**message, "role": "assistant"}
    content = message.get("content")
    if content is not None and not isinstance(content, str):  # numbers, odd parts: as text
        parts = content if isinstance(content, list) else [content]
        message["content"] = "".join(
            str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in parts)
    raw_calls = message.get("tool_calls")
    calls = []
    seen = set(taken)
    listed = raw_calls if isinstance(raw_calls, list) else []
    for index, call in enumerate(listed[:MAX_CALLS_PER_REPLY]):
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        call_id = call.get("id") if isinstance(call, dict) else None
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call_id = f"call_{position}_{index}"  # some servers reuse or omit ids
        seen.add(call_id)
        name = function.get("name")
        name = name if isinstance(name, str) and name else "(no name)"
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        try:
            parsed = json.loads(arguments or "{}")
            valid = isinstance(parsed, dict)
        except (ValueError, RecursionError):
            valid = False
        if not valid:
            arguments = json.dumps({"_invalid_arguments": arguments[:10_000]})
        calls.append({"id": call_id, "type": "function",
                      "function": {"name": name, "arguments": arguments or "{}"}})
    if calls:
        message["tool_calls"] = calls
    else:
        message.pop("tool_calls", None)
        if not message.get("content"):
            message["content"] = ""
    return message


def _signature(call: dict[str, Any]) -> str:
    arguments = call["function"].get("arguments") or "{}"
    try:
        arguments = json.dumps(json.loads(arguments), sort_keys=True)
    except (ValueError, RecursionError):
        pass
    return f"{call['function']['name']}:{arguments}"


def _failure_message(agent: Configured, session: Session, kind: str,
                     error: BaseException) -> str:
    name = agent.model.name
    first = str(error).splitlines()[0][:300] if str(error) else ""
    detail = f"{type(error).__name__}: {first}" if first else type(error).__name__
    if kind == "overflow":
        window = session.window()
        message = (
            f"The conversation no longer fits {name}'s context window ({window.raw_window:,} "
            f"tokens, from {window.source}), even after dropping the oldest rounds "
            f"{MAX_OVERFLOW_RECOVERIES} times. Run %compact (add what must be kept) or choose a "
            "model with a bigger window. The dropped rounds are gone only from what the model "
            "sees: the archive keeps every message (recall finds them).")
    elif kind == "auth":
        message = f"{auth_hint(name, error)} ({detail})"
    elif kind in FAILURES:
        message = FAILURES[kind].format(name=name, detail=detail,
                                        attempts=agent.retry.max_attempts)
    else:
        message = f"The call to {name} failed: {detail}"
    return redact(message)
