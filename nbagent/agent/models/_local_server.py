"""llama.cpp's OpenAI-compatible server for one GGUF, as a process of its own on a loopback
port, started on first use and kept alive (its own session, so the kernel's signals
never reach it; checked before each request and restarted if it died). The embedded
model's server (`server()`) is one per user and configuration, shared by that user's
kernels (`_shared_server`): started by the first that needs it, reused by the others,
gone when the last one lets go. A `LocalServer` made directly is this process's alone
and ends with it."""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...engine._exceptions import LocalModelError
from ..archive._private_files import SERVER_LOG, temporary_file
from ._chat_format import chat_format_for
from ._gguf import gguf_path
from ._local_model import (
    DECODING,
    ENDED_ELSEWHERE,
    REPLY_TOKENS,
    TOOL_ROUNDS,
    TOOL_ROUNDS_SMALL,
    LocalModel,
    exit_words,
)
from ._prompt_counter import PromptCounter, prompt_counter
from ._server_host import amx_advertised as amx_advertised  # tests and bench use these
from ._server_host import free_port
from ._server_host import server_threads as server_threads
from ._shared_server import (
    SharedServer,
    can_share,
    pid_alive,
    server_key,
    servers_folder,
    terminate,
)

CACHE_BYTES = 256 << 20  # the server's prompt cache
REPLY_SECONDS = 120.0  # each generation's time bound (then cut: finish_reason "length")
CHILD = Path(__file__).with_name("_server_child.py")  # run as a script: no nbagent import
RESTARTING = "the local model's server had stopped ({how}); restarting it…"
RESTART_FAILED = "the local model's server stopped ({how}) and could not be restarted: {error}"
StatusCallback = Callable[[str], None]


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one GGUF, on a free loopback port.

    `path=None` serves the bundled SmolLM2-135M. The chat format comes from the GGUF's own
    chat template (`chat_format_for`); `threads` (default `server_threads()`) is how many
    threads read prompts and generate; `reply_seconds` bounds each generation in time
    (a reply cut there ends with finish_reason "length", as at the token cap). Starting is
    thread-safe: a second caller waits for the start already under way.

    With `shared` (a folder, as `server()` gives its servers' folder), the server is one
    per user and configuration: `start` joins the one another process started (checked
    first), or starts it for all; `stop` lets go of it, ending it only when no other
    process holds it. Without, it is this process's and `stop` ends it.
    """

    def __init__(self, n_ctx: int = 8192, path: str | Path | None = None, *,
                 threads: int | None = None, reply_seconds: float = REPLY_SECONDS,
                 shared: Path | None = None) -> None:
        self.n_ctx = n_ctx
        self.threads = threads  # None: server_threads()
        self.reply_seconds = reply_seconds
        self.path = Path(path).expanduser() if path is not None else None
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None  # the server, if we started it
        self.pid: int | None = None  # the server's process, ours or another's
        self.users = 0  # the models of this process that use it (`server()`, `release`)
        self.shared = SharedServer(shared, server_key(**self._configuration())) if (
            shared is not None and can_share()) else None
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

    def _configuration(self) -> dict[str, object]:
        """What makes two servers the same (kernels share one only when all of it is)."""
        return {"model": str(self.path or gguf_path()), "n_ctx": self.n_ctx,
                "threads": self.threads or server_threads(), "reply_s": self.reply_seconds,
                "cache": CACHE_BYTES, "python": sys.executable, "child": str(CHILD)}

    @property
    def alive(self) -> bool:
        """True while the server process runs (a poll: no request)."""
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and pid_alive(self.pid)

    def died(self, within: float = 0.0) -> int | None:
        """How the server's process ended, if it has (waiting up to `within` seconds for
        it to end): its exit code when we started it, `ENDED_ELSEWHERE` when another
        process did; None while it runs, and if it was never started or was stopped."""
        process = self.process
        if process is not None:
            try:
                return process.wait(timeout=within) if within else process.poll()
            except subprocess.TimeoutExpired:
                return None
        if self.pid is None:
            return None
        deadline = time.monotonic() + within
        while pid_alive(self.pid):
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
        return ENDED_ELSEWHERE

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
                on_status(RESTARTING.format(how=exit_words(code)))
            if self.shared is not None and self.pid is not None:
                self.shared.forget(self.pid)
            self.pid = None
            try:
                self.start()
            except LocalModelError as error:
                raise LocalModelError(RESTART_FAILED.format(how=exit_words(code),
                                                            error=error)) from None
        return True

    def start(self, timeout: float = 120.0) -> LocalServer:
        """Start the server (a shared one: join it if another process runs it), or
        return at once if it runs."""
        with self._starting:
            shared = self.shared
            if self.alive and (shared is None or shared.holding):
                return self
            if shared is None:
                self._launch()
                self._wait_ready(timeout)
                return self
            with shared.starting():
                if self._join(shared):
                    return self
                self._launch()
                self._wait_ready(timeout)
                assert self.pid is not None
                shared.record(self.pid, self.port, self.alias)
        return self

    def _join(self, shared: SharedServer) -> bool:
        """Use the shared server another process runs (True), or hold it for a new one."""
        found = shared.join()
        if found is None:
            return False
        self.counter = self.counter or prompt_counter(self.path)
        self.process, self.pid, self.port = None, found[0], found[1]
        if not self._stops_at_exit:
            atexit.register(self.stop)
            self._stops_at_exit = True
        return True

    def _launch(self) -> None:
        self.counter = prompt_counter(self.path)
        model = gguf_path() if self.path is None else self.path
        chat_format = chat_format_for(self.counter.metadata)
        self.port = free_port(self.port)
        if self.process is not None:  # a restart: let go of the dead process's files
            self._end_pipe(self.process)
        if self._log is not None:
            self._log.close()
        self._log = temporary_file(kind=SERVER_LOG)  # a file: a full pipe would block it
        threads = self.threads or server_threads()
        # shared: it ends when no process holds its clients file (not with its starter)
        ours = ["--clients", str(self.shared.clients)] if self.shared is not None else []
        command = [
            sys.executable, str(CHILD), *(["--no-extra-buffers"] if amx_advertised() else []),
            *ours,
            "--model", str(model),
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
            "--model_alias", self.alias,
            "--n_threads", str(threads), "--n_threads_batch", str(threads),
            "--reply-seconds", str(self.reply_seconds),
            # a prompt cache: a chat resends the same prefix each turn
            "--cache", "true",
            # the prompt cache's RAM (llama.cpp's default, 2 GiB, grew past 10 GiB in a
            # long test session), all of each entry counted (`_server_child`)
            "--cache_size", str(CACHE_BYTES),
            # several kernels may share it: a request waits for the one being answered
            # (by default llama-cpp-python's server cuts a stream short when another comes)
            "--interrupt_requests", "false",
            "--logits_all", "false",  # no scores kept per prompt token: ~20% less CPU a read
        ]
        if chat_format is not None:
            command += ["--chat_format", chat_format]
        # its own session: the kernel's SIGINT (the stop button) goes to the kernel's
        # process group and must not reach the server; stdin ends it with its parent,
        # unless it is shared (its clients file ends it)
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL if ours else subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=self._log, start_new_session=True)
        self.pid = self.process.pid
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
        """End the server; a shared one only when no other process holds it (it is let
        go of, and ends by itself once the last holder has)."""
        process, self.process = self.process, None
        pid, self.pid = self.pid, None
        if self.shared is not None:
            last = self.shared.let_go()
            if not last or pid is None:
                return
            self.shared.forget(pid)
            if process is None:
                terminate(pid)
                return
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

    def release(self) -> None:
        """One model of this process no longer uses the server (`server()` counted it):
        stopped (a shared one: let go of) when none does."""
        with self._starting:
            self.users = max(0, self.users - 1)
            if self.users == 0:
                self.stop()

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
            # the seed comes from the prompt (the chat handler): see DECODING
            options={"max_tokens": max_tokens, "timeout": 300, **DECODING},
            context_window=self.n_ctx, max_output=max_tokens, counter=self.counter,
            tool_rounds=TOOL_ROUNDS_SMALL if self.bundled else TOOL_ROUNDS, server=self,
            on_status=on_status,
            hides_builtins=self.bundled,
        )

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokenizer, through the server (llama.cpp's /extras/tokenize)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/extras/tokenize",
            data=json.dumps({"input": text}).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return list(json.load(response)["tokens"])


_servers: dict[tuple[Path | None, int, Path], LocalServer] = {}
_servers_lock = threading.Lock()


def server(n_ctx: int = 8192, path: str | Path | None = None) -> LocalServer:
    """The running server for this GGUF (None: the bundled SmolLM2) and window size, shared
    with this user's other kernels: joined, or started on first use (a second thread
    asking meanwhile waits for the same start). Each call is one more user of it in this
    process, until its `release()`."""
    folder = servers_folder()
    key = (Path(path).expanduser().resolve() if path is not None else None, n_ctx, folder)
    with _servers_lock:
        if key not in _servers:
            _servers[key] = LocalServer(n_ctx, key[0], shared=folder)
        found = _servers[key]
    with found._starting:
        found.start()
        found.users += 1
    return found


def local_model(n_ctx: int = 8192, max_tokens: int = REPLY_TOKENS,
                path: str | Path | None = None, *,
                on_status: StatusCallback | None = None) -> LocalModel:
    """The embedded model as a chat model, its server started if need be; `on_status`
    receives its status lines (the server restarted, the prompt being read)."""
    return server(n_ctx, path).model(max_tokens, on_status=on_status)
