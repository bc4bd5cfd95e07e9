"""llama.cpp's OpenAI-compatible server for one GGUF, as a child process on a free
loopback port: one per (GGUF, window) per process, started on first use and stopped when
the process (or kernel) exits."""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from ...engine._exceptions import LocalModelError
from ._chat_format import chat_format_for
from ._gguf import gguf_path
from ._local_model import REPLY_TOKENS, TOOL_ROUNDS, TOOL_ROUNDS_SMALL, LocalModel
from ._prompt_counter import PromptCounter, prompt_counter

CACHE_BYTES = 256 << 20  # the server's prompt cache


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one GGUF, on a free loopback port.

    `path=None` serves the bundled SmolLM2-135M. The chat format comes from the GGUF's own
    chat template (`chat_format_for`).
    """

    def __init__(self, n_ctx: int = 8192, path: str | Path | None = None) -> None:
        self.n_ctx = n_ctx
        self.path = Path(path).expanduser() if path is not None else None
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.counter: PromptCounter | None = None
        self._log: Any = None

    @property
    def bundled(self) -> bool:
        return self.path is None

    @property
    def alias(self) -> str:
        """The model's name on the server (litellm reaches it as `openai/<alias>`)."""
        return "smollm2" if self.path is None else f"local-{self.path.stem}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 120.0) -> LocalServer:
        if self.process is not None and self.process.poll() is None:
            return self
        self.counter = prompt_counter(self.path)
        model = gguf_path() if self.path is None else self.path
        chat_format = chat_format_for(self.counter.metadata)
        self.port = _free_port()
        self._log = tempfile.TemporaryFile()  # a file, not a pipe: a full pipe would block it
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(model),
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
            "--model_alias", self.alias,
            # every core, and a prompt cache: a chat resends the same prefix each turn
            "--n_threads", str(os.cpu_count() or 1), "--cache", "true",
             # the prompt cache's RAM (llama.cpp's default, 2 GiB, grew past 10 GiB in a
             # long test session): a chat's prefix fits many times in 256 MiB
             "--cache_size", str(CACHE_BYTES),
        ]
        if chat_format is not None:
            command += ["--chat_format", chat_format]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._log)
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                self._log.seek(0)
                said = self._log.read().decode(errors="replace")[-800:]
                raise LocalModelError(f"The embedded model's server exited: {said.strip()}")
            try:
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise LocalModelError(f"The embedded model's server did not answer within "
                                          f"{timeout:.0f} s") from None
                time.sleep(0.25)
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
        """The served model as a chat model whose replies stop at `max_tokens` tokens
        (`finish_reason == "length"` says a reply was cut there)."""
        return LocalModel(
            f"openai/{self.alias}", api_base=self.base_url, api_key="local-no-key",
            options={"max_tokens": max_tokens, "timeout": 300, "temperature": 0.0, "seed": 7},
            context_window=self.n_ctx, max_output=max_tokens, counter=self.counter,
            tool_rounds=TOOL_ROUNDS_SMALL if self.bundled else TOOL_ROUNDS,
        )

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokenizer, through the server (llama.cpp's /extras/tokenize)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/extras/tokenize",
            data=json.dumps({"input": text}).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return list(json.load(response)["tokens"])


_servers: dict[tuple[Path | None, int], LocalServer] = {}


def server(n_ctx: int = 8192, path: str | Path | None = None) -> LocalServer:
    """The running server for this GGUF (None: the bundled SmolLM2) and window size,
    started on first use."""
    key = (Path(path).expanduser().resolve() if path is not None else None, n_ctx)
    if key not in _servers:
        _servers[key] = LocalServer(n_ctx, key[0])
    return _servers[key].start()


def local_model(n_ctx: int = 8192, max_tokens: int = REPLY_TOKENS,
                path: str | Path | None = None) -> LocalModel:
    """The embedded model as a chat model, its server started if need be."""
    return server(n_ctx, path).model(max_tokens)
