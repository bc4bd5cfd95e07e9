"""A chat request to litellm's OpenAI handler (streamed, or in one piece as a compaction's
summary is), built by litellm and sent without `litellm.completion`'s per-call wrapper.
`direct_route` says whether a request may go this way; `send_direct` builds its body with
litellm's own pieces (its message check, its parameter mapping, the provider's
`transform_request`, its stream options) and sends it with the openai SDK, as litellm does.
Anything else goes through `litellm.completion`.

Why: for a stream, the wrapper costs about as much as the rest of the turn — it sets up a
logging object, copies every message twice more (a thought-signature pass and a
re-validation), and prices the stream wrapper before a byte is read, counting the whole
history with tiktoken's cl100k_base (~40 MB loaded into the kernel for it). We price from
the provider's usage ourselves (`_llm.cost_of`), so none of that is needed; a summary in one
piece through it would load ~90 more modules and a logging thread (~10 MB). The body is
what litellm builds: tests/agent/models/test_direct.py compares the two for each provider.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._litellm import http_settings, litellm_params, thought_signature_separator
from ._stream import Streamed, logged, read_events

# The options this path maps through litellm's own parameter mapping (the request keys a
# `LiteLLMModel` sends, and what a local server's options hold); a request with any other
# key goes through `litellm.completion`, which knows them all.
MAPPED = frozenset({"temperature", "top_p", "max_tokens", "max_completion_tokens", "stop",
                    "seed", "presence_penalty", "frequency_penalty", "n", "user",
                    "prompt_cache_key", "tools", "tool_choice", "parallel_tool_calls"})
# request keys that are not parameters: where and how to send, and prices litellm keeps
PRICES = ("input_cost_per_token", "output_cost_per_token")
NOT_MAPPED = frozenset({"model", "messages", "api_base", "api_key", "timeout", *PRICES})
# litellm's settings for every call: when one is set, its wrapper applies it (a
# `client_session` is the HTTP client it sends on)
GLOBALS = ("api_base", "headers", "organization", "model_alias_map", "client_session")
ENVIRONMENT = ("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "OPENAI_ORGANIZATION")
SEPARATOR_HOLDERS = frozenset({"tool_call_id", "tool_calls"})
DEFAULT_TIMEOUT = 600.0  # litellm's for a call given none (and no litellm.request_timeout)


@dataclass(frozen=True)
class Route:
    """Where a direct request goes: litellm's model name (without its provider), the base
    URL and key as litellm resolves them for OpenAI, and the request's timeout."""

    model: str
    api_base: str
    api_key: str
    timeout: float
    named_base: str | None  # the base the request or the model's name gave (not the env)


@functools.lru_cache(maxsize=64)
def _provider(module: Any, model: str, api_base: str | None) -> tuple[str, str, str | None,
                                                                        str | None]:
    name, provider, key, base = module.get_llm_provider(model=model, api_base=api_base)
    return name, provider, key, base


def direct_route(module: Any, request: dict[str, Any]) -> Route | None:
    """The route for `request` when litellm would send it with its OpenAI handler and
    nothing else of litellm's needs to see it (no callbacks, no global settings, only
    options this path maps); None otherwise."""
    if logged(module) or any(key not in MAPPED and key not in NOT_MAPPED for key in request):
        return None
    if any(getattr(module, name, None) for name in GLOBALS) or any(
            os.environ.get(name) for name in ENVIRONMENT):
        return None
    try:
        model, provider, key, base = _provider(module, request["model"],
                                               request.get("api_base"))
    except Exception:  # litellm's own call says what is wrong with the name
        return None
    if provider != "openai" or _bridged(module, model) or _signed(request["messages"]):
        return None
    api_base = (request.get("api_base") or base or os.environ.get("OPENAI_BASE_URL")
                or os.environ.get("OPENAI_API_BASE") or "https://api.openai.com/v1")
    api_key = (request.get("api_key") or key or module.api_key or module.openai_key
               or os.environ.get("OPENAI_API_KEY"))
    if not api_key:  # litellm's error for a missing key is the one the user should see
        return None
    if getattr(module, "request_timeout_explicitly_set", False):
        return None
    return Route(model, api_base, api_key, float(request.get("timeout") or DEFAULT_TIMEOUT),
                 request.get("api_base") or base)


@functools.lru_cache(maxsize=64)
def _bridged(module: Any, model: str) -> bool:
    """Whether litellm sends `model`'s chat requests to OpenAI's Responses API instead."""
    try:
        return bool(module.get_model_info(f"openai/{model}").get("mode") == "responses")
    except Exception:  # unmapped (a server of one's own): a chat model
        return False


def _signed(messages: list[dict[str, Any]]) -> bool:
    """Whether a tool call id carries a Gemini thought signature, which litellm's wrapper
    strips for other providers (a session that switched models)."""
    separator = thought_signature_separator()
    for message in messages:
        if SEPARATOR_HOLDERS.isdisjoint(message):  # most messages: no id to look at
            continue
        ids = [message.get("tool_call_id") or ""]
        ids += [call.get("id") or "" for call in message.get("tool_calls") or ()
                if isinstance(call, dict)]
        if any(separator in i for i in ids):
            return True
    return False


def request_body(module: Any, route: Route, request: dict[str, Any],
                 stream: bool = True) -> dict[str, Any]:
    """The JSON body litellm's OpenAI handler sends for `request`: streamed with usage, or
    (`stream` false) as one reply."""
    messages = module.utils.validate_and_fix_openai_messages(messages=request["messages"])
    params = {key: request[key] for key in MAPPED if key in request}
    streaming: dict[str, Any] = (
        {"stream": True, "stream_options": {"include_usage": True}} if stream else {})
    optional = module.get_optional_params(
        model=route.model, custom_llm_provider="openai", messages=messages, **streaming,
        **params)
    for key in ("stream", "stream_options", "max_retries"):
        optional.pop(key, None)
    config = module.ProviderConfigManager.get_provider_chat_config(
        model=route.model, provider=module.LlmProviders.OPENAI)
    # what the provider's transformation reads of them: the provider and the base the
    # caller named (cache marks are kept for a server of one's own, dropped for OpenAI's)
    params_of_call = litellm_params(
        api_key=route.api_key, custom_llm_provider="openai", api_base=route.named_base,
        model_alias_map=module.model_alias_map, timeout=route.timeout,
        **{key: request[key] for key in PRICES if key in request})
    body: dict[str, Any] = config.transform_request(
        model=route.model, messages=messages, optional_params=optional,
        litellm_params=params_of_call, headers={})
    body.update(streaming)
    return body


@functools.cache
def _stream_class() -> Any:
    """The SDK's stream as `read_events` reads it: only the HTTP response. The SDK's own
    keeps its event iterator, a generator holding the stream (a reference cycle), and the
    request's options: each request's body and its copy of the history then live on
    until Python's next full collection, a few dozen turns later — ~20 MB of them at turn
    300, and the allocator's holes after them (docs/performance.md). Without the cycle a
    request's body goes when its reply is read."""
    import openai
    from openai.types.chat import ChatCompletionChunk

    class Response(openai.Stream[ChatCompletionChunk]):
        def __init__(self, *, response: Any, **_: Any) -> None:
            self.response = response

    return Response


class _Encoder:
    """A chat's body as the bytes the openai SDK would post for it (`openapi_dumps`, its own
    encoder), each message encoded once: the messages of the last request are kept by
    their fields, and a message with the same fields is not encoded again. A 300-message
    history took ~1.2 ms a turn to encode whole, though only the last two messages were
    new; the body is the same bytes (tests/agent/models/test_direct.py). Only messages whose
    values are all strings (or null) are kept: their fields say all of their JSON, and
    nothing in them can change in place. What is kept is the last request's messages:
    a history that drops a message drops its bytes at the next request."""

    MARK = "\x00nbagent: the messages\x00"  # where the messages go in the rest of the body

    def __init__(self, dumps: Callable[[Any], bytes]) -> None:
        self.dumps = dumps
        self.kept: dict[tuple[tuple[Any, Any], ...], bytes] = {}

    def encode(self, body: dict[str, Any]) -> bytes:
        dumps, kept = self.dumps, self.kept
        fresh: dict[tuple[tuple[Any, Any], ...], bytes] = {}
        parts = []
        for message in body["messages"]:
            fields = tuple(message.items()) if isinstance(message, dict) else None
            try:
                encoded = kept.get(fields) if fields is not None else None
            except TypeError:  # a list or a dict among the values: encoded every time
                fields, encoded = None, None
            if encoded is None:
                encoded = dumps(message)
                if fields is not None and not all(
                        type(k) is str and (type(v) is str or v is None) for k, v in fields):
                    fields = None
            if fields is not None:
                fresh[fields] = encoded
            parts.append(encoded)
        self.kept = fresh  # (another thread's request meanwhile: only a message encoded again)
        mark = dumps(self.MARK)
        rest = dumps({**body, "messages": self.MARK})
        if rest.count(mark) != 1:  # the mark's own text elsewhere in the body
            return dumps(body)
        head, _, tail = rest.partition(mark)
        return b"".join((head, b"[", b",".join(parts), b"]", tail))


@functools.cache
def _encoder() -> _Encoder | None:
    """The encoder, for an SDK that encodes with `openapi_dumps` and posts bytes given as
    `content` as they are (older ones encode every body themselves: None)."""
    import inspect

    import openai

    try:
        from openai._utils._json import openapi_dumps
    except ImportError:
        return None
    takes_bytes = "content" in inspect.signature(openai.OpenAI.post).parameters
    return _Encoder(openapi_dumps) if takes_bytes else None


@functools.lru_cache(maxsize=16)
def _client(api_base: str, api_key: str) -> Any:
    """The SDK's client, connecting as litellm's own clients do (`http_settings`): a
    server with a certificate of one's own trusted through `litellm.ssl_verify` is reached,
    and litellm's SSL context is shared — the SDK's default would load the certificates a
    second time (~0.5 MB in the kernel, docs/performance.md). The SDK's own HTTP client
    class (not litellm's: its response and stream hold each other, and a request's body
    with them, until a full collection)."""
    import openai

    # litellm's own retries are off (tenacity retries a call, `call_model`), as here
    return openai.OpenAI(api_key=api_key, base_url=api_base, max_retries=0,
                         http_client=openai.DefaultHttpxClient(**http_settings()))


def send_direct(module: Any, route: Route, request: dict[str, Any],
                on_text: Callable[[str], None] | None) -> Streamed:
    """Send `request` on `route`, each text piece to `on_text` (None: not streamed, the
    reply in one piece); errors as litellm's kinds."""
    body = request_body(module, route, request, stream=on_text is not None)
    import httpx
    from openai.types.chat import ChatCompletion

    extra = body.pop("extra_body", None) or {}  # the SDK's options, as litellm passes them
    headers = body.pop("extra_headers", None) or {}
    query = body.pop("extra_query", None) or {}
    options = {"timeout": route.timeout, "headers": headers, "params": query,
               "extra_json": extra or None}
    client = _client(route.api_base, route.api_key)
    try:  # the body as it is, as litellm posts it (the SDK's create() would rewrite it)
        if on_text is None:
            answer = client.post("/chat/completions", body=body, cast_to=httpx.Response,
                                 options=options).json()
        else:
            encoder = _encoder() if not extra else None  # (the SDK merges extra_body in)
            sent = {"content": encoder.encode(body)} if encoder else {"body": body}
            stream = client.post("/chat/completions", **sent, cast_to=ChatCompletion,
                                 options=options, stream=True, stream_cls=_stream_class())
    except Exception as error:
        raise module.exception_type(model=route.model, original_exception=error,
                                    custom_llm_provider="openai") from error
    if on_text is None:
        return Streamed(module.ModelResponse(**answer), answer.get("usage") is not None)
    return read_events(module, stream, on_text, model=route.model, provider="openai")
