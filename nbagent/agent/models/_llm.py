"""The one door to models. Every model call — chat and summaries — goes through
`call_model`, which retries transient failures with tenacity; `LiteLLMModel` is
the real model behind it, and nothing else in nbagent imports litellm. A model
object carries its capabilities (name, context window, maximum output). Tests put
`nbagent.testing.ScriptedModel` at this seam (same interface), not a patch.

litellm is imported on first use, with `LITELLM_LOCAL_MODEL_COST_MAP=True` set
first: otherwise its import fetches a price map from the network and stalls.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ...engine._events import EventStream, Retrying
from ...engine._exceptions import CompactionFailed
from ...engine._usage import Usage
from ...engine.compaction import SummaryReply
from ..providers._caching import CachePlan, apply_cache_plan, cache_family
from ..providers._errors import retry_after_seconds, should_retry
from ..providers._roles import bridged, refuses_user_after_tool
from ._litellm import litellm
from ._stream import stream_reply

if TYPE_CHECKING:
    import tenacity

logger = logging.getLogger("nbagent")
Message = dict[str, Any]
TextCallback = Callable[[str], None]


@functools.lru_cache(maxsize=256)
def _model_info(model: str) -> Mapping[str, Any] | None:
    try:
        return dict(litellm().get_model_info(model))
    except Exception:  # litellm raises a bare Exception for unmapped models
        return None


def model_info(model: str) -> Mapping[str, Any] | None:
    """litellm's metadata for `model` (window, max output, prices), or None if unknown."""
    return _model_info(model)


@dataclass(frozen=True)
class Completion:
    """One model response: the assistant message (OpenAI format), usage and cost
    (`input_cost`: the prompt side of it, cache reads and writes at their own rates)."""

    message: Message
    usage: Usage | None = None
    cost: float | None = None
    finish_reason: str | None = None
    input_cost: float | None = None


class ChatModel(Protocol):
    """What the agent needs of a model. `LiteLLMModel` and `ScriptedModel` both are one.

    `context_window` and `max_output` are what the model knows of itself (a local
    server's real window); None when unknown, and the window resolver asks
    litellm's model info and then the built-in table.
    """

    name: str
    context_window: int | None
    max_output: int | None

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextCallback | None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> Completion: ...


def _assistant_message(message: Any) -> Message:
    """An SDK message object as a plain, valid OpenAI-format assistant dict."""
    content = getattr(message, "content", None)
    result: Message = {"role": "assistant", "content": content if content else None}
    calls = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or ()):
        function = call.function
        calls.append(
            {
                "id": call.id or f"call_{index}",
                "type": "function",
                "function": {"name": function.name or "", "arguments": function.arguments or ""},
            }
        )
    if calls:
        result["tool_calls"] = calls
    if result["content"] is None and not calls:
        result["content"] = ""
    return result


@dataclass
class LiteLLMModel:
    """A real model reached through litellm: any provider, or a local OpenAI-compatible
    server (`api_base`). Extra `options` go to `litellm.completion` as they are.
    `send` also takes a `CachePlan`: the provider's cache markers or key (`call_model`
    passes one when the loop has it).
    """

    name: str
    api_base: str | None = None
    api_key: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    context_window: int | None = None
    max_output: int | None = None

    def count_text(self) -> Callable[[str], int] | None:
        """The model's exact tokenizer, where one is known offline (else None)."""
        from ._counters import counter_for

        return counter_for(self.name, api_base=self.api_base)

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextCallback | None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> Completion:
        return self.send(messages, tools, on_text=on_text, tool_choice=tool_choice)

    def provider(self) -> str | None:
        """litellm's provider for this model ("anthropic", "openai", ...), if it knows it."""
        info = model_info(self.name)
        provider = info.get("litellm_provider") if info else None
        return str(provider) if provider else None

    def send(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextCallback | None,
        tool_choice: str | dict[str, Any] | None = None,
        plan: CachePlan | None = None,
    ) -> Completion:
        """`complete`, with the prompt cache's markers or key placed by `plan`."""
        module = litellm()
        provider = self.provider()
        sent, caching = apply_cache_plan(self.name, provider, messages, plan)
        if refuses_user_after_tool(self.name, provider):
            sent = bridged(sent)
        request: dict[str, Any] = {"model": self.name, "messages": sent, **caching,
                                   **self.options}
        if tools:
            request["tools"] = tools
            if tool_choice is not None:
                request["tool_choice"] = tool_choice
        if self.api_base:
            request["api_base"] = self.api_base
        if self.api_key:
            request["api_key"] = self.api_key
        if on_text is None:
            response = module.completion(**request)
            usage = getattr(response, "usage", None)
        else:
            streamed = stream_reply(module, request, on_text)
            response = streamed.response
            # without the provider's count, litellm's own estimate is no usage to calibrate on
            usage = getattr(response, "usage", None) if streamed.usage_reported else None
        choice = response.choices[0]
        return Completion(
            message=_assistant_message(choice.message),
            usage=Usage.from_response(usage) if usage is not None else None,
            cost=cost_of(response),
            finish_reason=getattr(choice, "finish_reason", None),
            input_cost=self._input_cost(usage),
        )

    def _input_cost(self, usage: Any) -> float | None:
        """The prompt side of the cost (input, cache reads and writes, each at its rate)."""
        if usage is None:
            return None
        try:
            prompt, _ = litellm().cost_per_token(model=self.name, usage_object=usage)
        except Exception:  # unpriced models (local servers, proxies) raise
            return None
        return float(prompt) if prompt > 0 else None


def cost_of(response: Any) -> float | None:
    """The response's cost in USD from litellm's price map, or None when unknown."""
    try:
        cost = float(litellm().completion_cost(completion_response=response))
    except Exception:  # unpriced models (local servers, proxies) raise
        return None
    return cost if cost > 0 else None


@dataclass
class RetryPolicy:
    """How transient failures are retried: exponential backoff with jitter, or the
    provider's Retry-After when it sends one; bounded in attempts and total time."""

    max_attempts: int = 5
    max_seconds: float = 120.0
    backoff_s: float = 1.0
    max_wait_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep


def _wait(policy: RetryPolicy) -> Callable[[tenacity.RetryCallState], float]:
    import tenacity

    jitter = tenacity.wait_random_exponential(multiplier=policy.backoff_s, max=policy.max_wait_s)

    def wait(state: tenacity.RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        hinted = retry_after_seconds(error) if error is not None else None
        return min(hinted, policy.max_wait_s) if hinted is not None else float(jitter(state))

    return wait


def takes_cache_plan(model: ChatModel) -> bool:
    """Whether `call_model` sends through `LiteLLMModel.send` with a cache plan: a litellm
    model that completes as `LiteLLMModel` does (not one that overrides `complete`)."""
    return isinstance(model, LiteLLMModel) and type(model).complete is LiteLLMModel.complete


def takes_notes(model: ChatModel) -> bool:
    """Whether the notebook context goes into the history as notes (sent once each time
    it changed) rather than onto each request: for a model litellm knows, at a provider
    that caches prompts (marked or automatically). A server of one's own (unknown to
    litellm's map), a local runtime or Gemini gets it per request: the chat templates of
    some servers refuse a user message after a tool result or after another one."""
    if not takes_cache_plan(model):
        return False
    assert isinstance(model, LiteLLMModel)
    provider = model.provider()
    return provider is not None and cache_family(model.name, provider) != "none"


def call_model(
    model: ChatModel,
    messages: list[Message],
    tools: list[dict[str, Any]],
    *,
    on_text: TextCallback | None = None,
    policy: RetryPolicy | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    events: EventStream | None = None,
    plan: CachePlan | None = None,
) -> Completion:
    """Call `model`, retrying transient failures (each retry announced on `events`);
    other errors propagate at once. `plan` places the prompt cache's markers for a
    litellm model that completes as `LiteLLMModel` does; other models send as they are."""
    import tenacity  # imported here: it pulls in asyncio and tornado, too slow for start-up

    policy = policy or RetryPolicy()

    def announce(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        event = Retrying(state.attempt_number, wait, f"{type(error).__name__}: {error}"[:200])
        logger.info(
            "model call failed (%s); retry %d in %.1fs", event.error, event.attempt, event.wait_s
        )
        if events is not None:
            events.emit(event)

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(policy.max_attempts)
        | tenacity.stop_after_delay(policy.max_seconds),
        wait=_wait(policy),
        retry=tenacity.retry_if_exception(should_retry),
        sleep=policy.sleep,
        before_sleep=announce,
        reraise=True,
    )
    if plan is not None and takes_cache_plan(model):
        assert isinstance(model, LiteLLMModel)
        return retrying(model.send, messages, tools, on_text=on_text, tool_choice=tool_choice,
                        plan=plan)
    return retrying(model.complete, messages, tools, on_text=on_text, tool_choice=tool_choice)


def summarizer(
    model: ChatModel | str,
    policy: RetryPolicy | None = None,
    *,
    timeout: float | Callable[[], float] | None = None,
) -> Callable[[list[Message]], SummaryReply]:
    """A compaction summarizer that calls `model` through this seam.

    `timeout` (seconds, or a function giving them at call time) bounds each summary:
    a summarizer that hangs fails the compaction (the history stays as it was)
    instead of blocking the chat.
    """
    chat_model = LiteLLMModel(model) if isinstance(model, str) else model

    def call(messages: list[Message]) -> SummaryReply:
        completion = call_model(chat_model, messages, [], policy=policy)
        return SummaryReply(str(completion.message.get("content") or ""), completion.cost)

    def summarize(messages: list[Message]) -> SummaryReply:
        limit = timeout() if callable(timeout) else timeout
        if limit is None:
            return call(messages)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nbagent-summary")
        try:
            return pool.submit(call, messages).result(timeout=limit)
        except FutureTimeout:
            raise CompactionFailed(f"the summarizer did not answer within {limit:g} s",
                                   summary_calls=1) from None
        finally:
            pool.shutdown(wait=False)

    return summarize
