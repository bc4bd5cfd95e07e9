"""The one door to models: the `ChatModel` protocol, what a call returns (`Completion`)
and `LiteLLMModel`, the real model behind it — nothing else in nbagent imports litellm. A
model object carries its capabilities (name, context window, maximum output). Every model
call — chat and summaries — goes through `_call.call_model`, which retries transient
failures. Tests put `nbagent.testing.ScriptedModel` at this seam (same interface), not a
patch.

litellm is imported on first use, with `LITELLM_LOCAL_MODEL_COST_MAP=True` set
first: otherwise its import fetches a price map from the network and stalls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...engine._usage import Usage
from ..providers._caching import CachePlan, apply_cache_plan, cache_family
from ..providers._roles import shaped
from ._direct import direct_route, send_direct
from ._litellm import litellm
from ._stream import Streamed, stream_reply

Message = dict[str, Any]
TextCallback = Callable[[str], None]


# The names nbagent's stand-ins take unless told another (`ScriptedModel`, `offline_analyst`):
# litellm knows none of them, so it is not imported to be asked (seconds of CPU in a fresh
# kernel). A stand-in named after a real model is looked up as that model.
SCRIPTED_NAME, OFFLINE_NAME = "scripted/model", "offline/analyst"
STAND_IN_PREFIXES = tuple(name.partition("/")[0] + "/" for name in (SCRIPTED_NAME, OFFLINE_NAME))


@functools.lru_cache(maxsize=256)
def _model_info(model: str) -> Mapping[str, Any] | None:
    try:
        return dict(litellm().get_model_info(model))
    except Exception:  # litellm raises a bare Exception for unmapped models
        return None


def stand_in_name(model: str) -> bool:
    """True for a name only nbagent's stand-ins take (`STAND_IN_PREFIXES`): litellm knows
    nothing of it, and a session on it never needs litellm."""
    return model.startswith(STAND_IN_PREFIXES)


def model_info(model: str) -> Mapping[str, Any] | None:
    """litellm's metadata for `model` (window, max output, prices), or None if unknown
    (a stand-in's own name without importing litellm)."""
    return None if stand_in_name(model) else _model_info(model)


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
        request = self.request(messages, tools, tool_choice=tool_choice, plan=plan)
        route = direct_route(module, request)
        if route is not None:
            streamed = send_direct(module, route, request, on_text)
        elif on_text is None:
            streamed = Streamed(module.completion(**request), True)
        else:
            streamed = stream_reply(module, request, on_text)
        response = streamed.response
        # without the provider's count, litellm's own estimate is no usage to calibrate on
        usage = getattr(response, "usage", None) if streamed.usage_reported else None
        choice = response.choices[0]
        # litellm prices by the model's name or the name the reply gives; when its map has
        # neither (a server of one's own) and no prices were given, its cost functions only
        # raise, at ~0.6 ms a call
        named = self.prices() is not None or model_info(self.name) is not None
        priced = named or model_info(str(getattr(response, "model", "") or "")) is not None
        return Completion(
            message=_assistant_message(choice.message),
            usage=Usage.from_response(usage) if usage is not None else None,
            cost=cost_of(response, self.prices()) if priced else None,
            finish_reason=getattr(choice, "finish_reason", None),
            input_cost=self._input_cost(usage) if named else None,
        )

    def request(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        tool_choice: str | dict[str, Any] | None = None,
        plan: CachePlan | None = None,
    ) -> dict[str, Any]:
        """The arguments `send` gives litellm (or litellm's pieces, `_direct`) for a call:
        the messages shaped for the model, the cache plan's markers or key, the options."""
        provider = self.provider()
        sent, caching = apply_cache_plan(self.name, provider, messages, plan)
        sent = shaped(sent, self.name, provider)
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
        return request

    def prices(self) -> dict[str, float] | None:
        """The prices per token given in `options` (litellm's `input_cost_per_token`,
        `output_cost_per_token`) for a model its price map lacks or prices otherwise, or
        None to use the map."""
        given = {key: float(self.options[key]) for key in PRICE_OPTIONS if key in self.options}
        return given or None

    def _input_cost(self, usage: Any) -> float | None:
        """The prompt side of the cost (input, cache reads and writes, each at its rate)."""
        if usage is None:
            return None
        prices = self.prices()
        try:
            if prices is None:
                prompt, _ = litellm().cost_per_token(model=self.name, usage_object=usage)
            else:  # litellm prices a usage object by its map only: given prices, by count
                prompt, _ = litellm().cost_per_token(
                    model=self.name, prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                    custom_cost_per_token=prices)
        except Exception:  # unpriced models (local servers, proxies) raise
            return None
        return float(prompt) if prompt > 0 else None


# litellm's own options for a price per token: it takes them with a request (and sends
# neither to the provider); its cost functions read them only when handed them
PRICE_OPTIONS = ("input_cost_per_token", "output_cost_per_token")


def cost_of(response: Any, prices: Mapping[str, float] | None = None) -> float | None:
    """The response's cost in USD, from `prices` per token when given, else litellm's price
    map; None when unknown."""
    try:
        cost = float(litellm().completion_cost(completion_response=response,
                                               custom_cost_per_token=prices))
    except Exception:  # unpriced models (local servers, proxies) raise
        return None
    return cost if cost > 0 else None


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
