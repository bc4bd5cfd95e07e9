"""Reading a streamed reply. litellm builds and sends every request; what comes back is
read here, in one of two ways:

- OpenAI's Chat Completions events (litellm hands back the openai SDK's own stream: OpenAI,
  Azure, the OpenAI-compatible servers litellm reaches with that SDK) are read straight
  from the response (`event_data`: the events that arrived together split with bytes
  methods and parsed in one `json.loads`) and assembled once.
- Any other stream, or any stream while litellm has callbacks to call, goes through
  litellm's stream wrapper and `stream_chunk_builder`.

Why the first path exists: litellm's wrapper turns each event into pydantic objects of two
libraries, queues a logging task per event and assembles the reply twice at the end;
a ~400-event reply cost ~40× the same reply unstreamed (`bench/turn_cost.py`,
docs/performance.md). Read directly it costs about what the unstreamed call does. When
the user registered litellm callbacks, the wrapper reads every stream, so they see it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]


@dataclass(frozen=True)
class Streamed:
    """A streamed reply as litellm's non-streamed call returns it (a `ModelResponse`), and
    whether the provider reported its usage (otherwise `usage` is litellm's estimate)."""

    response: Any
    usage_reported: bool


def stream_reply(module: Any, request: dict[str, Any], on_text: Callable[[str], None]) -> Streamed:
    """Send `request` through litellm with streaming on, give each text piece to
    `on_text` as it arrives, and return the whole reply."""
    stream = module.completion(**request, stream=True, stream_options={"include_usage": True})
    raw = getattr(stream, "completion_stream", None)
    if _is_openai_stream(raw) and not logged(module):
        return read_events(module, raw, on_text, model=stream.model,
                           provider=stream.custom_llm_provider)
    chunks: list[Any] = []
    for chunk in stream:
        chunks.append(chunk)
        delta = chunk.choices[0].delta.content if chunk.choices else None
        if delta:
            on_text(delta)
    response = module.stream_chunk_builder(chunks, messages=request["messages"])
    reported = any(getattr(c, "usage", None) is not None for c in getattr(stream, "chunks", chunks))
    return Streamed(response, reported)


def logged(module: Any) -> bool:
    """Whether the user gave litellm callbacks (Langfuse, a logger of their own) or turned
    on its response cache: they see a stream only through litellm's wrapper, so the wrapper
    reads it then. litellm's own "cache" entry is not one: any `Cache()` adds it (litellm's
    Gemini module makes one at import), and with no response cache set it does nothing."""
    if getattr(module, "cache", None) is not None:
        return True
    return any(callback != "cache" for name in (
        "callbacks", "success_callback", "_async_success_callback")
        for callback in getattr(module, name, None) or ())


def _is_openai_stream(raw: Any) -> bool:
    try:
        import openai
    except ImportError:  # litellm without the openai SDK: its wrapper reads every stream
        return False
    # only a stream not yet started: its events are all still in the response
    return isinstance(raw, openai.Stream) and not getattr(raw.response, "is_stream_consumed", True)


class _Reply:
    """The reply as its events arrive: text, tool calls by index, stop reason, usage."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self.head: dict[str, Any] = {}

    def add(self, event: dict[str, Any], on_text: Callable[[str], None]) -> None:
        choices = event.get("choices")
        if self.head and choices and len(choices) == 1 and not event.get("usage"):
            # the usual event, a piece of text and nothing else: taken in a few lookups
            # (a reply of several hundred events spent a tenth of its turn here)
            choice = choices[0]
            delta = choice.get("delta")
            if (isinstance(delta, dict) and len(delta) == 1 and choice.get("index", 0) == 0
                    and not choice.get("finish_reason")):
                content = delta.get("content")
                if content and isinstance(content, str):
                    self.text.append(content)
                    on_text(content)
                    return
        if not self.head:
            self.head = {key: event[key] for key in ("id", "created", "model") if event.get(key)}
        if event.get("usage"):
            self.usage = event["usage"]
        for choice in event.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.text.append(delta["content"])
                on_text(delta["content"])
            for piece in delta.get("tool_calls") or ():
                call = self.calls.setdefault(piece.get("index", len(self.calls)),
                                             {"id": None, "name": "", "arguments": ""})
                call["id"] = call["id"] or piece.get("id")
                function = piece.get("function") or {}
                call["name"] = call["name"] or function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish

    def message(self) -> Message:
        message: Message = {"role": "assistant", "content": "".join(self.text) or None}
        if self.calls:
            message["tool_calls"] = [
                {"id": call["id"] or f"call_{index}", "type": "function",
                 "function": {"name": call["name"], "arguments": call["arguments"]}}
                for index, call in sorted(self.calls.items())]
        return message


def event_data(chunks: Iterable[bytes]) -> Iterator[list[str]]:
    """The `data` of each server-sent event in a byte stream, a list per batch of events
    that arrived together (the SSE format: events end at a blank line, a `data:` line adds
    to the event's data, other fields, comments and events with no data are passed over;
    any line ending).

    Read with bytes methods, a batch at a time: httpx-sse decodes each line in Python,
    which for a reply of several hundred events cost as much as the rest of the call."""
    pending = b""
    for chunk in itertools.chain(chunks, [None]):  # None: the end (a last CR ends its line)
        pending += chunk or b""
        if b"\r" in pending:  # CRLF or CR line endings, as the format allows
            if chunk is not None and pending.endswith(b"\r"):
                continue  # the LF of a CRLF may come next
            pending = pending.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *blocks, pending = pending.split(b"\n\n")
        batch = [data for block in blocks if (data := _data(block)) is not None]
        if batch:
            yield batch
    # an event the stream ended in is incomplete: passed over, as the format says


def _data(block: bytes) -> str | None:
    if block.startswith(b"data: ") and b"\n" not in block:  # the usual event: one line
        return block[6:].decode("utf-8", "replace")
    lines = [line[5:].removeprefix(b" ") for line in block.split(b"\n")
             if line.startswith(b"data:") or line == b"data"]  # "data": a field, empty
    return b"\n".join(lines).decode("utf-8", "replace") if lines else None


def _batches(chunks: Iterable[bytes]) -> Iterator[list[Any]]:
    """The events' JSON until `[DONE]`, a list per batch that arrived together, parsed at
    once when it is all JSON. The `[DONE]` that ends a stream, last in its batch, is left
    out of that parse: with it in, the batch failed to parse and was parsed again event by
    event (half of a reply's events when it came in two reads, all of them in one)."""
    for batch in event_data(chunks):
        done = batch[-1].startswith("[DONE]")
        try:
            parsed = json.loads("[" + ",".join(batch[:-1] if done else batch) + "]")
        except ValueError:  # an event that is not JSON, or a [DONE] before the batch's end:
            parsed = None  # each on its own, in order
        if parsed is not None:
            yield parsed
            if done:
                return
            continue
        parsed = []
        for data in batch:
            if data.startswith("[DONE]"):
                yield parsed
                return
            parsed.append(json.loads(data))
        yield parsed


def read_events(module: Any, raw: Any, on_text: Callable[[str], None], *, model: str,
                provider: str | None) -> Streamed:
    """Read the openai SDK's stream `raw` (not yet started) event by event; errors as
    litellm's kinds for `model` at `provider`."""
    import openai

    reply = _Reply()
    try:
        for batch in _batches(raw.response.iter_bytes()):
            for data in batch:
                if isinstance(data, dict) and data.get("error"):
                    # as the openai SDK raises it, then mapped as litellm's wrapper maps it
                    error = data["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    raise openai.APIError(str(message or error), raw.response.request,
                                          body=error)
                if isinstance(data, dict):
                    reply.add(data, on_text)
    except Exception as error:  # a dropped connection, an error event: litellm's kinds
        raise module.exception_type(model=model, original_exception=error,
                                    custom_llm_provider=provider) from error
    finally:
        raw.close()
    response = module.ModelResponse(
        **reply.head, choices=[{"index": 0, "message": reply.message(),
                                "finish_reason": reply.finish or "stop"}],
        **({"usage": reply.usage} if reply.usage else {}))
    return Streamed(response, reply.usage is not None)
