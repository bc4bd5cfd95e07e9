"""llama.cpp's OpenAI-compatible server for one GGUF, as a child process on a loopback
port: one per (GGUF, window) per process, started on first use, kept alive (its own
session, so the kernel's signals never reach it; restarted if it died) and stopped when
the process (or kernel) exits."""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...engine._exceptions import LocalModelError
from ._chat_format import chat_format_for
from ._gguf import gguf_path
from ._local_model import (
    REPLY_TOKENS,
    SMALL_MODEL_SKIPS,
    TOOL_ROUNDS,
    TOOL_ROUNDS_SMALL,
    LocalModel,
)
from ._prompt_counter import PromptCounter, prompt_counter

CACHE_BYTES = 256 << 20  # the server's prompt cache
REPLY_SECONDS = 120.0  # each generation's time bound (then cut: finish_reason "length")
CHILD = Path(__file__).with_name("_server_child.py")  # run as a script: no nbagent import
RESTARTING = "the local model's server had stopped (exit code {code}); restarting it…"
RESTART_FAILED = "the local model's server stopped (exit code {code}) and could not be " \
                 "restarted: {error}"
StatusCallback = Callable[[str], None]


def amx_advertised(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """True when the CPU says it has AMX tiles: llama.cpp then uses them, which faults in
    VMs that advertise AMX without enabling it; the server runs without them (its gain
    for the small models served here is small)."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as info:
            return any(line.startswith("flags") and " amx_tile" in line for line in info)
    except OSError:
        return False


def server_threads(cores: int | None = None) -> int:
    """Threads for the server's generation and prompt reading: half the cores this process
    may run on, at least one. llama.cpp's worker threads wait for each other by spinning
    (llama-cpp-python 0.3 cannot attach a passively waiting threadpool), so with a thread
    on every core one busy process (a browser, a build, the kernel streaming the reply)
    stalls every step: 127.9 s instead of 10.4 s for one request on 2 cores, measured.
    A 135M model gains little from more threads; see bench/embedded.py."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
    return max(1, cores // 2)


def _free_port(wanted: int = 0) -> int:
    """`wanted` if it can be bound now (a restart keeps its address), else any free port."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            sock.bind(("127.0.0.1", wanted))
        except OSError:
            sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one GGUF, on a free loopback port.

    `path=None` serves the bundled SmolLM2-135M. The chat format comes from the GGUF's own
    chat template (`chat_format_for`); `threads` (default `server_threads()`) is how many
    threads read prompts and generate; `reply_seconds` bounds each generation in time
    (a reply cut there ends with finish_reason "length", as at the token cap). Starting is
    thread-safe: a second caller waits for the start already under way.
    """

    def __init__(self, n_ctx: int = 8192, path: str | Path | None = None, *,
                 threads: int | None = None, reply_seconds: float = REPLY_SECONDS) -> None:
        self.n_ctx = n_ctx
        self.threads = threads  # None: server_threads()
        self.reply_seconds = reply_seconds
        self.path = Path(path).expanduser() if path is not None else None
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.counter: PromptCounter | None = None
        self.last_exit: int | None = None  # how the previous process ended, if it died
        self._log: Any = None
        self._starting = threading.RLock()
        self._stops_at_exit = False

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

    @property
    def alive(self) -> bool:
        """True while the server process runs (a poll of the child: no request)."""
        return self.process is not None and self.process.poll() is None

    def died(self, within: float = 0.0) -> int | None:
        """The exit code if the process we started has ended (waiting up to `within`
        seconds for it to end), else None — also None if it was never started or stopped."""
        process = self.process
        if process is None:
            return None
        try:
            return process.wait(timeout=within) if within else process.poll()
        except subprocess.TimeoutExpired:
            return None

    def ensure_running(self, on_status: StatusCallback | None = None) -> bool:
        """Before a request: True if the server had died and was restarted (the status
        line says so), False if it runs. Raises `LocalModelError` naming the exit code
        when the restart fails."""
        code = self.died()
        if code is None:
            return False
        with self._starting:
            if self.alive:  # another thread restarted it meanwhile
                return True
            self.last_exit = code
            if on_status is not None:
                on_status(RESTARTING.format(code=code))
            try:
                self.start()
            except LocalModelError as error:
                raise LocalModelError(RESTART_FAILED.format(code=code, error=error)) from None
        return True

    def start(self, timeout: float = 120.0) -> LocalServer:
        with self._starting:
            if self.alive:
                return self
            self._launch()
            self._wait_ready(timeout)
        return self

    def _launch(self) -> None:
        self.counter = prompt_counter(self.path)
        model = gguf_path() if self.path is None else self.path
        chat_format = chat_format_for(self.counter.metadata)
        self.port = _free_port(self.port)
        if self.process is not None:  # a restart: let go of the dead process's files
            self._end_pipe(self.process)
        if self._log is not None:
            self._log.close()
        self._log = tempfile.TemporaryFile()  # a file, not a pipe: a full pipe would block it
        threads = self.threads or server_threads()
        command = [
            sys.executable, str(CHILD), *(["--no-extra-buffers"] if amx_advertised() else []),
            "--model", str(model),
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
            "--model_alias", self.alias,
            "--n_threads", str(threads), "--n_threads_batch", str(threads),
            "--reply-seconds", str(self.reply_seconds),
            # a prompt cache: a chat resends the same prefix each turn
            "--cache", "true",
            # the prompt cache's RAM (llama.cpp's default, 2 GiB, grew past 10 GiB in a
            # long test session): a chat's prefix fits many times in 256 MiB
            "--cache_size", str(CACHE_BYTES),
        ]
        if chat_format is not None:
            command += ["--chat_format", chat_format]
        # its own session: the kernel's SIGINT (the stop button) goes to the kernel's
        # process group and must not reach the server; stdin ends it with its parent
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=self._log,
                                        start_new_session=True)
        if not self._stops_at_exit:
            atexit.register(self.stop)
            self._stops_at_exit = True

    def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                self._log.seek(0)
                said = self._log.read().decode(errors="replace")[-800:]
                self._end_pipe(self.process)
                raise LocalModelError(f"The embedded model's server exited: {said.strip()}")
            try:
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2)
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise LocalModelError(f"The embedded model's server did not answer within "
                                          f"{timeout:.0f} s") from None
                time.sleep(0.25)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._end_pipe(process)

    @staticmethod
    def _end_pipe(process: subprocess.Popen[bytes]) -> None:
        if process.stdin is not None:
            try:
                process.stdin.close()
            except OSError:
                pass

    def model(self, max_tokens: int = REPLY_TOKENS, *,
              on_status: StatusCallback | None = None) -> LocalModel:
        """The served model as a chat model whose replies stop at `max_tokens` tokens
        (`finish_reason == "length"` says a reply was cut there). Before each request it
        checks this server is alive and restarts it if it died."""
        return LocalModel(
            f"openai/{self.alias}", api_base=self.base_url, api_key="local-no-key",
            options={"max_tokens": max_tokens, "timeout": 300, "temperature": 0.0, "seed": 7},
            context_window=self.n_ctx, max_output=max_tokens, counter=self.counter,
            tool_rounds=TOOL_ROUNDS_SMALL if self.bundled else TOOL_ROUNDS, server=self,
            on_status=on_status,
            skips=SMALL_MODEL_SKIPS if self.bundled else frozenset(),
        )

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokenizer, through the server (llama.cpp's /extras/tokenize)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/extras/tokenize",
            data=json.dumps({"input": text}).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return list(json.load(response)["tokens"])


_servers: dict[tuple[Path | None, int], LocalServer] = {}
_servers_lock = threading.Lock()


def server(n_ctx: int = 8192, path: str | Path | None = None) -> LocalServer:
    """The running server for this GGUF (None: the bundled SmolLM2) and window size,
    started on first use (a second thread asking meanwhile waits for the same start)."""
    key = (Path(path).expanduser().resolve() if path is not None else None, n_ctx)
    with _servers_lock:
        if key not in _servers:
            _servers[key] = LocalServer(n_ctx, key[0])
        found = _servers[key]
    return found.start()


def local_model(n_ctx: int = 8192, max_tokens: int = REPLY_TOKENS,
                path: str | Path | None = None, *,
                on_status: StatusCallback | None = None) -> LocalModel:
    """The embedded model as a chat model, its server started if need be; `on_status`
    receives its status lines (the server restarted, the prompt being read)."""
    return server(n_ctx, path).model(max_tokens, on_status=on_status)
