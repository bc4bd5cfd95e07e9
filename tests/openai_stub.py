"""A small OpenAI-compatible chat server on 127.0.0.1 for tests: real HTTP, real
response shapes (JSON and server-sent events), tool calls, usage, and the real
`context_length_exceeded` 400 an OpenAI-style server sends for a long prompt.

Rules: a prompt over `context` tokens (chars / 4) gets the 400; a user message
as the last message gets a call to the first offered tool; anything else gets a
text answer quoting the last tool result. Two servers that misbehave as real ones do:
`CuttingServer` answers an over-long prompt cut at its front (Ollama, llama.cpp), and
`UnderReportingServer` reports only part of each prompt in its usage (Ollama's uncached
tokens).

`info` adds the endpoints local servers describe themselves with (llama.cpp's
`/props`, vLLM's `/v1/models`, LM Studio's `/api/v0/models`, Ollama's `/api/ps` and
`/api/show`): path -> JSON payload, or a function of the request body (None: 404).
Every other path answers 404, as a real server of another kind would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Info = dict[str, Any | Callable[[dict[str, Any]], Any]]


class StubServer:
    def __init__(self, context: int = 3_000, info: Info | None = None) -> None:
        self.context = context
        self.info: Info = info or {}
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []  # every path asked for, in order
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def send_json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def describe(self, body: dict[str, Any]) -> bool:
                """Answer an `info` path (or 404 for an unknown one); False for chat."""
                path = self.path.split("?")[0]
                stub.paths.append(path)
                if path.endswith("/chat/completions"):
                    return False
                answer = stub.info.get(path)
                payload = answer(body) if callable(answer) else answer
                if payload is None:
                    self.send_json(404, {"error": f"no {path} here"})
                else:
                    self.send_json(200, payload)
                return True

            def do_GET(self) -> None:  # noqa: N802
                self.describe({})

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.describe(body):
                    return
                stub.requests.append(body)
                status, payload = stub.answer(body)
                if status != 200 or not body.get("stream"):
                    self.send_json(status, payload)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in stub.chunks(payload, body):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body["messages"]
        prompt = (
            sum(len(json.dumps(m)) for m in messages) // 4
            + sum(len(json.dumps(t)) for t in body.get("tools", [])) // 4
        )
        if prompt > self.context:
            return 400, {
                "error": {
                    "message": f"This model's maximum context length is {self.context} tokens. "
                    f"However, you requested {prompt + 100} tokens ({prompt} in the "
                    "messages, 100 in the completion). Please reduce the length of the "
                    "messages or completion.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
        last = messages[-1]
        if last["role"] == "user" and body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(self.requests)}",
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": json.dumps({"note": "from the stub"}),
                        },
                    }
                ],
            }
            finish = "tool_calls"
        else:
            seen = str(last.get("content") or "")[:40]
            message = {"role": "assistant", "content": f"I see: {seen}"}
            finish = "stop"
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 10,
                "total_tokens": prompt + 10,
            },
        }

    def chunks(self, payload: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
        """The same answer as a stream: text in pieces, tool-call arguments in pieces."""
        base = {
            "id": payload["id"],
            "object": "chat.completion.chunk",
            "created": 0,
            "model": payload["model"],
        }
        choice = payload["choices"][0]
        message = choice["message"]

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        out = [chunk({"role": "assistant", "content": ""})]
        if message.get("content"):
            text = message["content"]
            out += [chunk({"content": text[i : i + 5]}) for i in range(0, len(text), 5)]
        for index, call in enumerate(message.get("tool_calls") or ()):
            arguments = call["function"]["arguments"]
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            out += [
                chunk(
                    {
                        "tool_calls": [
                            {"index": index, "function": {"arguments": arguments[i : i + 7]}}
                        ]
                    }
                )
                for i in range(0, len(arguments), 7)
            ]
        out.append(chunk({}, choice["finish_reason"]))
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append({**base, "choices": [], "usage": payload["usage"]})
        return out


def prompt_size(body: dict[str, Any]) -> int:
    """The stub's count of a request: characters of its messages and tools over four."""
    return (sum(len(json.dumps(m)) for m in body["messages"])
            + sum(len(json.dumps(t)) for t in body.get("tools", []))) // 4


class CuttingServer(StubServer):
    """A server that answers an over-long prompt instead of refusing it, as Ollama does past
    its context (`num_ctx`): the front of the prompt (the tools, the system prompt, the
    oldest messages) is dropped and the reply is 200 OK. `keep="half"` keeps half the
    context and reports `num_ctx // 2 + 2` read (Ollama's older runner); `keep="fit"` keeps
    as much as fits and reports exactly `num_ctx` read (its newer runner, llama.cpp).
    `cut` records, per request, whether it was cut; `sizes` what each request was."""

    def __init__(self, context: int, keep: str = "half", info: Info | None = None,
                 mark: str = "") -> None:
        super().__init__(context=10**9, info=info)  # the base class never refuses
        self.num_ctx, self.keep, self.mark = context, keep, mark
        self.cut: list[bool] = []
        self.sizes: list[int] = []

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        read = prompt_size(body)
        cut = read > self.num_ctx
        self.cut.append(cut)
        self.sizes.append(read)
        if cut:
            kept = self.num_ctx // 2 if self.keep == "half" else self.num_ctx
            body = {**body, "tools": []}
            messages = list(body["messages"])
            while len(messages) > 1 and prompt_size({"messages": messages}) > kept:
                messages.pop(0)
            body["messages"] = messages
            read = self.num_ctx // 2 + 2 if self.keep == "half" else self.num_ctx
        status, payload = super().answer(body)
        message = payload["choices"][0]["message"]
        if self.mark and message.get("content"):
            saw = any(self.mark in str(m.get("content")) for m in body["messages"])
            message["content"] = f"[system prompt {'seen' if saw else 'lost'}] " \
                                 f"{message['content']}"
        payload["usage"] = {"prompt_tokens": read, "completion_tokens": 10,
                            "total_tokens": read + 10}
        return status, payload


class UnderReportingServer(StubServer):
    """A server that reads every prompt whole (refusing one over `context`) but reports
    only part of it, as some Ollama versions do: the tokens not already in its cache (what
    the request shares with the one before counts as cached and is left out), or, with
    `share`, that share of the prompt."""

    def __init__(self, context: int = 10**9, share: float | None = None) -> None:
        super().__init__(context=context)
        self.share = share
        self.previous: list[str] = []
        self.reported: list[int] = []

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, payload = super().answer(body)
        if status != 200:
            return status, payload
        parts = [json.dumps(m) for m in body["messages"]]
        shared = 0
        for old, new in zip(self.previous, parts, strict=False):
            if old != new:
                break
            shared += 1
        self.previous = parts
        whole = prompt_size(body)
        read = round(whole * self.share) if self.share is not None else max(
            1, whole - sum(len(p) for p in parts[:shared]) // 4)
        self.reported.append(read)
        payload["usage"] = {"prompt_tokens": read, "completion_tokens": 10,
                            "total_tokens": read + 10}
        return status, payload
