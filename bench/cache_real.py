"""Prompt caching on the real request path: `Agent.chat` with the real built-in tools,
notebook context, compaction and summarizer, through litellm's real request
transformations, to a stub on 127.0.0.1 that speaks each provider's API and bills each
request by that provider's documented caching rules.

    python bench/cache_real.py --json      # one JSON object, the figures per provider
    python bench/cache_real.py             # also writes the caching section of docs/performance.md
    python bench/cache_real.py --turns 40  # a shorter session

The stub's billing rules (what it charges is what the provider would):

Anthropic Messages (`/v1/messages`; also Bedrock's and Vertex's Claude models)
  - only what a request marks is cached: a block carrying `cache_control` is a breakpoint;
    at most four per request; the cached prefix is tools, then system, then messages, up
    to and including the marked block (the marker itself is not part of the content);
  - a breakpoint reads the longest prefix written before that ends at it or at one of the
    20 blocks before it (the look-back); a prefix written further back is not found;
  - the tokens from the end of what was read up to the last breakpoint are written (billed
    as cache writes, 1.25× input); every breakpoint's prefix is stored; what follows the
    last breakpoint is plain input;
  - a prefix under the model's minimum (1,024 tokens for Sonnet and Opus, 2,048 for
    Haiku) is neither written nor read; the 5-minute TTL is ignored (no wall time here).
OpenAI chat completions (`/v1/chat/completions`, model `gpt-…`)
  - automatic: the longest prefix shared with an earlier request is read from cache, in
    steps of 128 tokens from 1,024 on (nothing under 1,024); no write charge;
    `prompt_cache_key` only routes requests to one cache, so the stub (one machine) needs
    none to hit.
DeepSeek (`/v1/chat/completions`, model `deepseek-…`)
  - automatic on disk: the shared prefix is read in units of 64 tokens; no write charge.
Tokens are bytes / 4 of each block's (Anthropic) or the request's (OpenAI, DeepSeek)
canonical JSON; prices are litellm's (`model_cost`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOOK_BACK = 20
MAX_BREAKPOINTS = 4
OPENAI_MINIMUM, OPENAI_STEP, DEEPSEEK_UNIT = 1_024, 128, 64
Step = str | list[tuple[str, dict[str, Any]]]  # an answer, or the tool calls to make


@dataclass
class Bill:
    """What one request was billed."""

    provider: str
    model: str
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    chat: bool  # a chat request (tools offered), not a summary

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


def _tokens(payload: Any) -> int:
    return max(1, len(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()) // 4)


def _without_marker(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) \
        else block


def anthropic_blocks(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The request as Anthropic caches it: tools, system, then each message's blocks."""
    blocks: list[tuple[str, dict[str, Any]]] = [("tool", t) for t in body.get("tools") or []]
    system = body.get("system") or []
    blocks += [("system", b) for b in (
        [{"type": "text", "text": system}] if isinstance(system, str) else system)]
    for message in body.get("messages", []):
        content = message["content"]
        content = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks += [(f"{message['role']}:{j}", b) for j, b in enumerate(content)]
    return blocks


def anthropic_minimum(model: str) -> int:
    return 2_048 if "haiku" in model else 1_024


class AnthropicCache:
    """Anthropic's rules: breakpoints, look-back, minimum, writes (see the module docstring)."""

    def __init__(self) -> None:
        self.stored: set[str] = set()

    def bill(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """(input, cache read, cache write) tokens of one request; stores its prefixes."""
        blocks = anthropic_blocks(body)
        chain, sizes, running, digest = [], [], 0, ""
        for where, block in blocks:
            digest = hashlib.sha256((digest + where + json.dumps(
                _without_marker(block), sort_keys=True)).encode()).hexdigest()
            running += _tokens(_without_marker(block))
            chain.append(digest)
            sizes.append(running)
        marks = [i for i, (_, block) in enumerate(blocks) if "cache_control" in block]
        assert len(marks) <= MAX_BREAKPOINTS, f"{len(marks)} breakpoints: Anthropic refuses it"
        minimum = anthropic_minimum(str(body.get("model")))
        read = 0
        for mark in marks:
            for index in range(mark, max(-1, mark - LOOK_BACK - 1), -1):
                if chain[index] in self.stored:
                    read = max(read, sizes[index])
                    break
        write = 0
        if marks and sizes[marks[-1]] >= minimum:
            write = max(0, sizes[marks[-1]] - read)
        self.stored.update(chain[m] for m in marks if sizes[m] >= minimum)
        total = sizes[-1] if sizes else 0
        return total - read - write, read, write


class PrefixCache:
    """Automatic prefix caching (OpenAI, DeepSeek): the longest prefix shared with a recent
    request, rounded down to the provider's unit."""

    def __init__(self, minimum: int, step: int, keep: int = 32) -> None:
        self.minimum, self.step = minimum, step
        self.seen: deque[bytes] = deque(maxlen=keep)

    def bill(self, body: dict[str, Any]) -> tuple[int, int, int]:
        rendered = render_openai(body)
        total = max(1, len(rendered) // 4)
        shared = max((_common_prefix(rendered, old) for old in self.seen), default=0) // 4
        read = 0 if shared < self.minimum else \
            self.minimum + (shared - self.minimum) // self.step * self.step
        self.seen.append(rendered)
        return total - read, read, 0


def render_openai(body: dict[str, Any]) -> bytes:
    """Tools, then each message, one canonical JSON line each: what the prompt's tokens follow."""
    lines = [json.dumps(body.get("tools") or [], ensure_ascii=False, sort_keys=True)]
    lines += [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in body["messages"]]
    return "\n".join(lines).encode()


def _common_prefix(a: bytes, b: bytes) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _is_chat(body: dict[str, Any]) -> bool:
    return bool(body.get("tools")) and "<conversation>" not in json.dumps(body["messages"][-1:])


class ProviderStub:
    """One HTTP server answering Anthropic Messages and OpenAI-style chat completions.

    Chat requests (tools offered) pop the next scripted `Step`; summary requests are
    answered by `summarize(prompt text)`. Every request is captured and billed.
    """

    def __init__(self, summarize: Callable[[str], str] | None = None) -> None:
        self.steps: deque[Step] = deque()
        self.summarize = summarize or (lambda prompt: "- noted")
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self.bills: list[Bill] = []
        self.probes: list[str] = []  # other paths asked for (answered 404)
        self.caches: dict[str, AnthropicCache | PrefixCache] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith(("/messages", "/chat/completions", "/converse")):
                    stub.probes.append(self.path)  # a local server's self-description: none
                    self.send_error(404)
                    return
                with stub._lock:
                    payload = stub.answer(self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> ProviderStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _cache(self, provider: str) -> AnthropicCache | PrefixCache:
        if provider not in self.caches:
            self.caches[provider] = (
                AnthropicCache() if provider == "anthropic" else
                PrefixCache(OPENAI_MINIMUM, OPENAI_STEP) if provider == "openai" else
                PrefixCache(DEEPSEEK_UNIT, DEEPSEEK_UNIT))
        return self.caches[provider]

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        model = str(body.get("model"))
        provider = "anthropic" if path.endswith("/messages") else \
            "deepseek" if "deepseek" in model else "openai"
        if path.endswith("/converse"):  # Bedrock: captured and answered, not billed
            self.bodies.append(("bedrock", body))
            step = self.steps.popleft() if self.steps else "Done."
            content = [{"text": step}] if isinstance(step, str) else [
                {"toolUse": {"toolUseId": f"tooluse_{next(self._ids)}", "name": name,
                             "input": arguments}} for name, arguments in step]
            return {"output": {"message": {"role": "assistant", "content": content}},
                    "stopReason": "end_turn" if isinstance(step, str) else "tool_use",
                    "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}}
        self.bodies.append((provider, body))
        chat = _is_chat(body)
        step: Step = (self.steps.popleft() if self.steps else "Done.") if chat else \
            self.summarize(_last_text(body))
        uncached, read, write = self._cache(provider).bill(body)
        output = _tokens(step)
        self.bills.append(Bill(provider, model, uncached, read, write, output, chat))
        if provider == "anthropic":
            return self._anthropic(model, step, uncached, read, write, output)
        return self._openai(provider, model, step, uncached + read, read, output)

    def _anthropic(self, model: str, step: Step, uncached: int, read: int, write: int,
                   output: int) -> dict[str, Any]:
        content = [{"type": "text", "text": step}] if isinstance(step, str) else [
            {"type": "tool_use", "id": f"toolu_{next(self._ids):05d}", "name": name,
             "input": arguments} for name, arguments in step]
        return {"id": f"msg_{next(self._ids)}", "type": "message", "role": "assistant",
                "model": model, "content": content, "stop_sequence": None,
                "stop_reason": "end_turn" if isinstance(step, str) else "tool_use",
                "usage": {"input_tokens": uncached, "output_tokens": output,
                          "cache_read_input_tokens": read,
                          "cache_creation_input_tokens": write}}

    def _openai(self, provider: str, model: str, step: Step, prompt: int, read: int,
                output: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": step if isinstance(
            step, str) else None}
        if not isinstance(step, str):
            message["tool_calls"] = [
                {"id": f"call_{next(self._ids):05d}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for name, arguments in step]
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": output,
                                 "total_tokens": prompt + output,
                                 "prompt_tokens_details": {"cached_tokens": read}}
        if provider == "deepseek":  # DeepSeek's own fields, beside the OpenAI ones
            usage.update(prompt_cache_hit_tokens=read, prompt_cache_miss_tokens=prompt - read)
        return {"id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion",
                "created": 1, "model": model,
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "stop" if isinstance(step, str) else
                             "tool_calls"}],
                "usage": usage}


def _last_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


@dataclass
class Prices:
    """$ per token, from litellm's price map."""

    input: float
    cache_read: float
    cache_write: float
    output: float

    @classmethod
    def of(cls, model: str) -> Prices:
        from nbagent.agent.models._litellm import litellm

        info = litellm().model_cost[model]
        base = float(info["input_cost_per_token"])
        return cls(base, float(info.get("cache_read_input_token_cost") or base),
                   float(info.get("cache_creation_input_token_cost") or base),
                   float(info["output_cost_per_token"]))

    def input_cost(self, bill: Bill) -> float:
        return (bill.input_tokens * self.input + bill.cache_read_tokens * self.cache_read
                + bill.cache_write_tokens * self.cache_write)


@dataclass
class Totals:
    bills: list[Bill] = field(default_factory=list)

    def share(self) -> float:
        prompt = sum(b.prompt_tokens for b in self.bills)
        return sum(b.cache_read_tokens for b in self.bills) / prompt if prompt else 0.0
