"""Fakes that ship with nbagent, for your tests and ours: real objects with the
same interface as the model seam, replaying a script and recording every call.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ...engine import compaction
from ...engine._markers import is_plain_user
from ...engine._usage import Usage
from ...engine.compaction import SummaryReply
from ._llm import OFFLINE_NAME, SCRIPTED_NAME

Reply = str | SummaryReply | BaseException | Callable[[list[dict[str, Any]]], str]


def _next_in_script(script: list[Any], default: Any, what: str) -> Any:
    """The next scripted item (or the default); an exception in the script is raised."""
    if script:
        item = script.pop(0)
    elif default is not None:
        item = default
    else:
        raise AssertionError(f"{what}: the script has nothing left")
    if isinstance(item, BaseException):
        raise item
    return item


class ScriptedSummarizer:
    """A summarizer that replays queued replies: text, a `SummaryReply`, an exception
    to raise, or a function of the request. Every request is recorded in `requests`.

        summarize = ScriptedSummarizer(["## 1. Primary Request and Intent ..."])
        controller = CompactionController(summarize=summarize)
        ...
        summarize.assert_consumed()
    """

    def __init__(self, replies: Iterable[Reply] = (), *, default: Reply | None = None,
                 record: bool = True) -> None:
        self.replies: list[Reply] = list(replies)
        self.default = default
        self.record = record  # False for soak runs: keep no copy of each request
        self.calls = 0
        self.requests: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> str | SummaryReply:
        self.calls += 1
        if self.record:
            self.requests.append(copy.deepcopy(messages))
        reply: Reply = _next_in_script(self.replies, self.default,
                                       f"ScriptedSummarizer call {self.calls}")
        # (an exception in the script was raised by _next_in_script)
        return reply(messages) if callable(reply) else reply  # type: ignore[return-value]

    def last_prompt(self) -> str:
        """The text of the last request's final message (what the model was asked)."""
        return str(self.requests[-1][-1]["content"])

    def assert_consumed(self) -> None:
        assert not self.replies, f"{len(self.replies)} scripted replies were never used"


@dataclass(frozen=True)
class Step:
    """One scripted model response: text, tool calls (name, arguments), usage, cost."""

    text: str | None = None
    tool_calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    usage: Usage | None = None
    cost: float | None = None
    fail_after_text: BaseException | None = None  # the stream breaks after the text
    finish_reason: str | None = None  # default: "tool_calls" or "stop"
    raw_message: dict[str, Any] | None = None  # sent as it is (malformed output tests)


def reply(text: str, *, usage: Usage | None = None, cost: float | None = None,
          finish_reason: str | None = None) -> Step:
    """A scripted plain-text answer (`finish_reason="length"`: cut by the output cap)."""
    return Step(text=text, usage=usage, cost=cost, finish_reason=finish_reason)


def calls(
    *tool_calls: tuple[str, dict[str, Any] | str],
    text: str | None = None,
    usage: Usage | None = None,
) -> Step:
    """A scripted answer that calls tools: `calls(("describe", {"name": "df"}))`."""
    return Step(text=text, tool_calls=tuple(tool_calls), usage=usage)


class ProviderError(Exception):
    """A provider-shaped error: an HTTP status, a message, response headers."""

    def __init__(self, status_code: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers or {}


def provider_error(
    status: int, message: str = "", *, retry_after: float | None = None
) -> ProviderError:
    """An error as a provider raises it: `provider_error(429, "slow down", retry_after=7)`."""
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return ProviderError(status, message, headers)


ModelStep = Step | str | BaseException | Callable[[list[dict[str, Any]]], "Step | str"]


class ScriptedModel:
    """A chat model that replays a script — replies, tool calls, usages, errors — and
    records every request. It has `LiteLLMModel`'s interface, so it goes where a real
    model goes (`Agent(model=ScriptedModel([...]))`).

        model = ScriptedModel([calls(("list_variables", {})), reply("You have df.")])
        agent = Agent(model=model)
        agent.chat("what do I have?")
        model.assert_consumed()
    """

    def __init__(
        self,
        steps: Iterable[ModelStep] = (),
        *,
        name: str = SCRIPTED_NAME,
        default: ModelStep | None = None,
        record: bool = True,
        context_window: int | None = None,
        max_output: int | None = None,
    ) -> None:
        self.name = name
        self.context_window = context_window  # what the model knows of itself, if anything
        self.max_output = max_output
        self.record = record  # False for soak runs: keep no copy of each request
        self.steps: list[ModelStep] = list(steps)
        self.default = default
        self.requests: list[list[dict[str, Any]]] = []
        self.tools_seen: list[list[dict[str, Any]]] = []
        self.tool_choices: list[str | dict[str, Any] | None] = []
        self._call_number = 0
        self._request_number = 0

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None] | None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> Any:
        from ._llm import Completion

        if self.record:
            self.requests.append(copy.deepcopy(messages))
            self.tools_seen.append(copy.deepcopy(tools))
            self.tool_choices.append(tool_choice)
        self._request_number += 1
        step = _next_in_script(self.steps, self.default,
                               f"ScriptedModel request {self._request_number}")
        if callable(step):
            step = step(messages)
        if isinstance(step, str):
            step = Step(text=step)
        if step.text and on_text is not None:
            for index, word in enumerate(step.text.split(" ")):  # word by word, like a stream
                on_text(word if index == 0 else " " + word)
        if step.fail_after_text is not None:
            raise step.fail_after_text
        message: dict[str, Any] = {"role": "assistant", "content": step.text}
        if step.tool_calls:
            message["tool_calls"] = []
            for name, arguments in step.tool_calls:
                self._call_number += 1
                message["tool_calls"].append(
                    {
                        "id": f"call_{self._call_number}",
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": arguments
                            if isinstance(arguments, str)
                            else json.dumps(arguments),
                        },
                    }
                )
        elif not step.text:
            message["content"] = ""
        if step.raw_message is not None:
            message = copy.deepcopy(step.raw_message)
        finish = step.finish_reason or ("tool_calls" if step.tool_calls else "stop")
        return Completion(message, step.usage, step.cost, finish)

    def last_request(self) -> list[dict[str, Any]]:
        return self.requests[-1]

    def assert_consumed(self) -> None:
        assert not self.steps, f"{len(self.steps)} scripted steps were never used"


# the sections the offline analyst writes its notes under (by title; the rest say "None.")
OFFLINE_NOTED = ("Primary Request and Intent", "All user messages", "Current Work")


def _offline_summary(prompt: str) -> str:
    asks = [line.strip() for line in prompt.split("<conversation>")[-1].splitlines()
            if line and not line.startswith("[") and "?" in line][-10:]
    notes = "\n".join(f"- {ask}" for ask in asks) or "- (no questions yet)"
    if not compaction.is_summary_request(prompt):
        return notes
    return "\n\n".join(f"## {n}. {title}\n{notes if title in OFFLINE_NOTED else 'None.'}"
                       for n, title in enumerate(compaction.SECTIONS, 1))


def _without_context(text: str) -> str:
    """A user message without the notebook context a request puts before it."""
    if text.startswith("[") and "]\n\n" in text:
        return text.rsplit("]\n\n", 1)[1]
    return text


def offline_analyst(name: str = OFFLINE_NAME) -> ScriptedModel:
    """A rule-following stand-in for a real model, for demos without an API key.

    It looks before it answers: a question gets `list_variables`; a question
    about "each"/"every"/"all" table then gets `describe_variable` on each
    DataFrame in turn, one per round; other questions describe the first one.
    The answer quotes what the tools returned. Asked to summarize, it writes
    notes from the questions it saw. It remembers which tables it described for the
    question at hand, as a model's own reasoning would, so a compaction that folds
    those rounds away mid-question does not send it round again.
    """
    described_for: dict[str, set[str]] = {}

    def respond(messages: list[dict[str, Any]]) -> Step:
        last = messages[-1]
        if last["role"] == "user" and ("<conversation>" in str(last["content"])
                                       or "<memory>" in str(last["content"])):
            return Step(text=_offline_summary(str(last["content"])))  # a compaction request
        question = next((_without_context(str(m["content"])) for m in reversed(messages)
                         if is_plain_user(m)), "")
        if last["role"] == "user":
            return Step(tool_calls=(("list_variables", {}),))
        listing = next((str(m["content"]) for m in messages if m["role"] == "tool"
                        and "DataFrame" in str(m["content"])), "")
        frames = [line.split(":")[0] for line in listing.splitlines() if "DataFrame" in line]
        asked_at = max(i for i, m in enumerate(messages) if m["role"] == "user")
        described = {json.loads(call["function"]["arguments"]).get("name")
                     for m in messages[asked_at:] if m["role"] == "assistant"
                     for call in m.get("tool_calls") or ()
                     if call["function"]["name"] == "describe_variable"}
        described |= described_for.setdefault(question, set())
        wanted = frames if any(w in question.lower() for w in ("each", "every", "all")) else (
            frames[:1])
        todo = [f for f in wanted if f not in described]
        if todo:
            described_for[question].add(todo[0])
            return Step(tool_calls=(("describe_variable", {"name": todo[0], "rows": 5}),))
        described_for.pop(question, None)  # answered: the same question again starts afresh
        seen = str(last["content"])[:600]
        return Step(text=f"Here is what I found for *{question[:80]}*:\n\n```\n{seen}\n```")

    return ScriptedModel(name=name, default=respond)
