"""The embedded model's chat handler for llama-cpp-python ("nbagent-chatml"): the prompt
rendered by the GGUF's own ChatML template with no escaping (llama-cpp-python's
chatml-function-calling autoescapes HTML, so `'"<&` reached the model as entities),
tools offered and called as SmolLM2 and Hermes-style ChatML models were trained to
(`<tools>` in the system message, `<tool_call>{...}</tool_call>` in the reply), and one
streamed generation for both a tool call and an answer.

How tools and calls read as text is `_tool_prompt`'s (llama-free: the agent counts the
tools' cost from it). Standard library, jinja2 (through llama-cpp-python), llama_cpp and
`_tool_prompt` only: the server's process (`_server_child`) loads the two files as a
package of their own, without importing nbagent.
"""

from __future__ import annotations

import json
import re
import time
import uuid
import zlib
from collections.abc import Iterator
from typing import Any

import llama_cpp
from llama_cpp import llama_chat_format
from llama_cpp.llama_grammar import LlamaGrammar, SchemaConverter

from ._tool_prompt import (
    ANSWER,
    CALL,
    CALL_CLOSE,
    CALL_OPEN,
    MARKERS,
    TOOLS_PROMPT,
    call_text,
    chat_messages,
    lean_tool,
    tools_text,
)

__all__ = ["ANSWER", "CALL", "CALL_CLOSE", "CALL_OPEN", "FORMAT", "MARKERS", "TOOLS_PROMPT",
           "call_grammar", "call_text", "chat_messages", "handler", "lean_tool", "parse_calls",
           "prompt_seed", "register", "render", "tools_text"]
FORMAT = "nbagent-chatml"
# A retry after a reply that was tool-call syntax when none could be called: the answer
# may not begin with either marker (nor with a blank, which would get round that).
NO_CALL_GRAMMAR = r'''root ::= first rest
first ::= [^<f \t\n] | "<" [^t] | "f" [^u]
rest ::= [^\x00]*
'''
_FORMATTERS: dict[str, llama_chat_format.Jinja2ChatFormatter] = {}
# one generation's time bound from its first token: the server's process sets it from
# `--reply-seconds`
reply_seconds = float("inf")


def parse_calls(text: str, names: set[str]) -> list[dict[str, Any]] | None:
    """The tool calls a reply makes (`<tool_call>` JSON, one object or a list, or
    chatml-function-calling's `functions.<name>:` and JSON), or None when it is not
    well-formed calls of offered tools."""
    text = text.strip()
    found: list[Any] = []
    if text.startswith(CALL_OPEN):
        for body in re.split(re.escape(CALL_OPEN), text)[1:]:
            body = body.split(CALL_CLOSE)[0].strip()
            try:
                parsed = json.loads(body)
            except ValueError:
                return None
            found += parsed if isinstance(parsed, list) else [parsed]
    elif text.startswith("functions."):
        for name, body in re.findall(r"functions\.([\w-]+):\s*(\{.*?\})\s*(?=functions\.|$)",
                                     text, re.S):
            try:
                found.append({"name": name, "arguments": json.loads(body)})
            except ValueError:
                return None
    calls = []
    for item in found:
        if not isinstance(item, dict) or item.get("name") not in names:
            return None
        arguments = item.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return None
        if not isinstance(arguments, dict):
            return None
        calls.append({"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                      "function": {"name": item["name"],
                                   "arguments": json.dumps(arguments, ensure_ascii=False)}})
    return calls or None


def render(llama: llama_cpp.Llama, messages: list[dict[str, Any]],
           tools: list[dict[str, Any]]) -> str:
    """The prompt: the GGUF's own template through llama-cpp-python's Jinja2 formatter,
    whose environment does not autoescape (the text reaches the model as it was)."""
    template = llama.metadata["tokenizer.chat_template"]
    if template not in _FORMATTERS:
        _FORMATTERS[template] = llama_chat_format.Jinja2ChatFormatter(
            template=template, eos_token="<|im_end|>", bos_token="", add_generation_prompt=True)
    return str(_FORMATTERS[template](messages=chat_messages(messages, tools)).prompt)


class _Chunks:
    """Stream chunks of one reply (one id)."""

    def __init__(self) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def __call__(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": "local", "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                               "finish_reason": finish}]}


class _Generation:
    """One generation's text, streamed as it comes, with its end (why it stopped)."""

    def __init__(self, llama: llama_cpp.Llama, prompt: str, sampling: dict[str, Any],
                 max_tokens: int | None, grammar: LlamaGrammar | None = None) -> None:
        self.timed_out = False
        deadline: list[float] = []

        def out_of_time(_ids: Any, _logits: Any) -> bool:
            # the clock starts at the first token: reading the prompt cannot be cut short
            if not deadline:
                deadline.append(time.monotonic() + reply_seconds)
            self.timed_out = self.timed_out or time.monotonic() > deadline[0]
            return self.timed_out

        self.finish: str | None = None
        self.chunks = llama.create_completion(
            prompt=prompt, stream=True, max_tokens=max_tokens, stop=["<|im_end|>", CALL_CLOSE],
            grammar=grammar, stopping_criteria=llama_cpp.StoppingCriteriaList([out_of_time]),
            **sampling)

    def __iter__(self) -> Iterator[str]:
        for chunk in self.chunks:
            choice = chunk["choices"][0]
            if choice["text"]:
                yield choice["text"]
            if choice["finish_reason"] is not None:
                self.finish = "length" if self.timed_out else choice["finish_reason"]


def prompt_seed(prompt: str) -> int:
    """A sampling seed from the prompt itself: a reply is reproducible for the same
    request, and different questions do not share one stream of random draws (a fixed
    seed started every reply with the same choices)."""
    return zlib.crc32(prompt.encode("utf-8", "surrogatepass")) & 0x7FFFFFFF


def call_grammar(functions: dict[str, dict[str, Any]], answer: bool) -> LlamaGrammar:
    """The reply's shape: `functions.<name>:` and arguments that tool's schema allows
    (llama-cpp-python's JSON-schema converter), or with `answer` the answer marker and any
    text. The model weighs the two markers; a call is well-formed either way."""
    converter = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False,
                                raw_pattern=False)
    calls = []
    for index, (name, function) in enumerate(functions.items()):
        schema = converter.resolve_refs(function.get("parameters") or {"type": "object"}, name)
        rule = converter.visit(schema, f"tool{index}")
        calls.append(f'{json.dumps(f"{name}:")} "\\n" {rule}')
    root = f'root ::= "{CALL}" ( {" | ".join(calls)} )'
    if answer:
        root += f' | "{ANSWER}" [^\\x00]*'
    return LlamaGrammar.from_string(f"{root}\n{converter.format_grammar()}", verbose=False)


def _events(llama: llama_cpp.Llama, messages: list[dict[str, Any]],
            tools: list[dict[str, Any]], tool_choice: Any, sampling: dict[str, Any],
            max_tokens: int | None, seen: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The reply as stream chunks, from one generation: an answer streams as it comes;
    a tool call (grammar-bound when tools are offered) is sent once whole. With no tools,
    text that begins like a tool call is held back and, as no call can be made, asked
    again as an answer that cannot begin like one."""
    offered = tools if tools and tool_choice != "none" else []
    functions = {t.get("function", t)["name"]: t.get("function", t) for t in offered}
    if isinstance(tool_choice, dict) and tool_choice["function"]["name"] in functions:
        functions = {tool_choice["function"]["name"]: functions[tool_choice["function"]["name"]]}
    prompt = seen["prompt"] = render(llama, messages, offered)
    if "seed" not in sampling:  # the prompt's own: the same request draws the same reply
        sampling = {**sampling, "seed": prompt_seed(prompt)}
    chunk = _Chunks()
    yield chunk({"role": "assistant"})
    grammar = call_grammar(functions, answer=not isinstance(tool_choice, dict)) if (
        functions) else None
    generation = _Generation(llama, prompt, sampling, max_tokens, grammar)
    held, streaming = "", False
    for text in generation:
        if streaming:
            yield chunk({"content": text})
            continue
        held += text
        start = held.lstrip()
        if grammar is not None and start.startswith(ANSWER):
            start = start[len(ANSWER):].lstrip()
            if not start:
                continue  # the marker, then the answer's first words
        elif any(m.startswith(start) or start.startswith(m) for m in (*MARKERS, ANSWER)):
            continue  # may be (or is) a tool call: hold it back
        streaming = True
        yield chunk({"content": start})
    if streaming or not held.strip():
        yield chunk({}, generation.finish or "stop")
        return
    calls = parse_calls(held, set(functions)) if functions else None
    if calls is not None:
        yield from _call_chunks(chunk, calls)
        return
    if grammar is not None:  # a call cut short by a bound: nothing to send, but why
        yield chunk({}, generation.finish or "length")
        return
    # raw tool-call syntax where no call can be made: never the answer
    retry = _Generation(llama, prompt, sampling, max_tokens,
                        LlamaGrammar.from_string(NO_CALL_GRAMMAR, verbose=False))
    for text in retry:
        yield chunk({"content": text})
    yield chunk({}, retry.finish or "stop")


def _call_chunks(chunk: _Chunks, calls: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    deltas = [{"index": i, **call} for i, call in enumerate(calls)]
    yield chunk({"tool_calls": deltas})
    yield chunk({}, "tool_calls")


SAMPLING = ("temperature", "top_p", "top_k", "min_p", "typical_p", "presence_penalty",
            "frequency_penalty", "repeat_penalty", "seed")


def handler(llama: llama_cpp.Llama, messages: list[dict[str, Any]],
            tools: list[dict[str, Any]] | None = None, tool_choice: Any = None,
            stream: bool = False, max_tokens: int | None = None, **kwargs: Any) -> Any:
    """llama-cpp-python's chat completion handler interface: a response, or with
    `stream` an iterator of chunks."""
    sampling = {key: kwargs[key] for key in SAMPLING if kwargs.get(key) is not None}
    seen: dict[str, str] = {}
    events = _events(llama, messages, tools or [], tool_choice or "auto", sampling, max_tokens,
                     seen)
    if stream:
        return events
    chunks = list(events)
    return _whole(llama, chunks, llama.tokenize(seen["prompt"].encode(), special=True))


def _whole(llama: llama_cpp.Llama, chunks: list[dict[str, Any]],
           prompt: list[int]) -> dict[str, Any]:
    """The chunks of a reply as one response."""
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    calls = [call for c in chunks for call in c["choices"][0]["delta"].get("tool_calls") or ()]
    message: dict[str, Any] = {"role": "assistant", "content": content if not calls else None}
    if calls:
        message["tool_calls"] = [{k: v for k, v in call.items() if k != "index"}
                                 for call in calls]
    written = content + "".join(json.dumps(call["function"]) for call in calls)
    completion = len(llama.tokenize(written.encode(), add_bos=False, special=True))
    return {"id": chunks[0]["id"], "object": "chat.completion", "created": chunks[0]["created"],
            "model": "local",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": chunks[-1]["choices"][0]["finish_reason"]}],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": completion,
                      "total_tokens": len(prompt) + completion}}


def register() -> None:
    """Make "nbagent-chatml" a chat format llama-cpp-python knows (idempotent)."""
    llama_chat_format.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        FORMAT, handler, overwrite=True)
