"""The chat loop, as plain functions over an `Agent`: compact at the turn boundary →
call the model (recovering from "prompt too long") → run the tools → compact
mid-loop → repeat until the model answers without tool calls or a limit stops it.
Everything the model said or a tool returned stays in the history.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._archive import redact
from ._exceptions import ModelCallError
from ._llm import Completion, call_model
from ._output import output_cap
from ._tools import run_tool
from ._provider_errors import classify_error
from .events import ContextChanged, ToolFinished, ToolStarted

if TYPE_CHECKING:
    from ._agent import Agent, ChatResult
    from ._controller import Decision

MAX_OVERFLOW_RECOVERIES = 2
LOOP_WARN_AT = 3  # the third identical call in a row gets a steering note
STEER = (
    "\n\n[nbagent: this is the third identical {name} call in a row and it returns the "
    "same thing. Change the arguments, try another tool, or answer with what you have.]"
)
NOT_RUN = "Not run: the same call was repeated {count} times in a row; the chat was stopped."


def _emit_state(agent: Agent) -> None:
    agent.emit(ContextChanged(agent.context_state(), agent.cost))


def _failure_message(agent: Agent, kind: str, error: BaseException) -> str:
    limits = agent.controller.thresholds(agent.model.name)
    detail = (
        f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
        if str(error)
        else (type(error).__name__)
    )
    if kind == "overflow":
        return (
            f"The conversation no longer fits {agent.model.name}'s context window "
            f"({limits.window.raw_window:,} tokens, from {limits.window.source}), even after "
            f"dropping the oldest rounds {MAX_OVERFLOW_RECOVERIES} times. Run %compact (add focus "
            "instructions to say what matters) or choose a model with a bigger window "
            "(NBAGENT_MODEL). Nothing was lost: the history keeps every message."
        )
    if kind == "auth":
        return (
            f"{agent.model.name} rejected the credentials ({detail}). Set the provider's API "
            "key (e.g. OPENAI_API_KEY or ANTHROPIC_API_KEY) and run the cell again."
        )
    if kind == "rate_limit":
        return (
            f"{agent.model.name} is still rate-limiting after {agent.retry.max_attempts} "
            f"attempts ({detail}). Wait a minute and run the cell again."
        )
    return f"The call to {agent.model.name} failed: {detail}"


def request(
    agent: Agent,
    on_text: Callable[[str], None] | None,
    decisions: list[Decision],
    tool_choice: str | None = None,
) -> Completion:
    """One model request, with reactive recovery: on "prompt too long", drop the oldest
    rounds (L4) and retry, at most twice; then give up with an actionable message."""
    for attempt in range(MAX_OVERFLOW_RECOVERIES + 1):
        agent.history.check_ready()
        try:
            return call_model(
                agent.model,
                agent.history.messages,
                agent.tool_schemas(),
                on_text=on_text,
                policy=agent.retry,
                tool_choice=_tool_choice(tool_choice),
            )
        except Exception as error:
            kind = classify_error(error)
            if kind == "overflow" and attempt < MAX_OVERFLOW_RECOVERIES:
                decisions.append(
                    agent.controller.handle_ptl_error(agent.history, error, model=agent.model.name)
                )
                continue
            raise ModelCallError(kind, redact(_failure_message(agent, kind, error))) from error
    raise AssertionError("unreachable")


def _tool_choice(choice: str | None) -> str | dict[str, Any] | None:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _record(agent: Agent, completion: Completion) -> dict[str, Any]:
    if completion.usage is not None:
        agent.tracker.record_usage(
            agent.history, completion.usage, model=agent.model.name, tools=agent.tool_schemas()
        )
    agent.cost += completion.cost or 0.0
    message = dict(completion.message)
    taken = {m.get("tool_call_id") for m in agent.history if m["role"] == "tool"}
    for index, call in enumerate(message.get("tool_calls") or ()):
        if not call.get("id") or call["id"] in taken:  # some servers reuse or omit ids
            call["id"] = f"call_{len(agent.history)}_{index}"
        arguments = call["function"].get("arguments") or ""
        try:
            json.loads(arguments or "{}")
        except json.JSONDecodeError:  # keep the model's text, as valid JSON for the history
            call["function"] = {
                **call["function"],
                "arguments": json.dumps({"_invalid_arguments": arguments}),
            }
    agent.history.append(message)
    return message


def _signature(call: dict[str, Any]) -> str:
    arguments = call["function"].get("arguments") or "{}"
    try:
        arguments = json.dumps(json.loads(arguments), sort_keys=True)
    except json.JSONDecodeError:
        pass
    return f"{call['function']['name']}:{arguments}"


def run_chat(agent: Agent, text: str, on_text: Callable[[str], None] | None,
             tool_choice: str | None = None) -> ChatResult:
    from ._agent import ChatResult

    settings = agent.settings()
    started = time.monotonic()
    cost_before = agent.cost
    decisions: list[Decision] = []
    agent.history.append({"role": "user", "content": text})
    rounds = 0
    last_signature, repeats = "", 0

    def finish(reply: str, reason: str = "done", message: str | None = None) -> ChatResult:
        _emit_state(agent)
        return ChatResult(reply, reason, message, rounds, agent.cost - cost_before, decisions)

    while True:
        decision = agent.controller.maybe_compact(agent.history, model=agent.model.name)
        if decision.action in ("compacted", "failed"):
            decisions.append(decision)
        completion = request(agent, on_text, decisions, tool_choice if rounds == 0 else None)
        message = _record(agent, completion)
        _emit_state(agent)
        calls = message.get("tool_calls") or []
        if not calls:
            return finish(str(message.get("content") or ""))
        rounds += 1
        stop: tuple[str, str] | None = None
        for call in calls:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            signature = _signature(call)
            repeats = repeats + 1 if signature == last_signature else 1
            last_signature = signature
            agent.emit(ToolStarted(call["id"], name, arguments))
            if repeats > LOOP_WARN_AT or stop is not None:
                output, ok, full = NOT_RUN.format(count=repeats), False, 0
                stop = stop or (
                    "loop",
                    f"Stopped: {name} was called {repeats} times in a row with the same arguments.",
                )
            else:
                output, ok, full = run_tool(
                    agent.tools,
                    name,
                    arguments,
                    call_id=call["id"],
                    store=agent.store,
                    default_cap=output_cap(
                        settings.tool_output_max_chars,
                        agent.controller.thresholds(agent.model.name).scale,
                    ),
                    timeout=settings.tool_timeout_s,
                )
                if repeats == LOOP_WARN_AT:
                    output += STEER.format(name=name)
            agent.history.append({"role": "tool", "tool_call_id": call["id"], "content": output})
            agent.emit(ToolFinished(call["id"], name, ok, len(output), max(full, len(output)),
                                    output[:1_000]))
        mid = agent.controller.on_tool_result(agent.history, model=agent.model.name)
        if mid.action in ("compacted", "failed"):
            decisions.append(mid)
        _emit_state(agent)
        if stop is not None:
            return finish(str(message.get("content") or ""), *stop)
        if rounds >= settings.max_tool_rounds:
            return finish(
                str(message.get("content") or ""),
                "max_rounds",
                f"Stopped after {rounds} rounds of tool calls (NBAGENT_MAX_TOOL_ROUNDS).",
            )
        if time.monotonic() - started > settings.max_chat_seconds:
            return finish(
                str(message.get("content") or ""),
                "timeout",
                f"Stopped after {settings.max_chat_seconds:g} s (NBAGENT_MAX_CHAT_SECONDS).",
            )
