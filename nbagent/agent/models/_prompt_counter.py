"""The embedded model's own tokenizer and chat template, in this process: a request is
rendered exactly as the llama.cpp server will render it and its tokens counted, with no
server and no network. One counter per GGUF per process."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import io
import threading
from pathlib import Path
from typing import Any

from ...engine._exceptions import LocalModelError
from ._chat_format import chat_format_for
from ._gguf import INSTALL, gguf_path
from ._local_messages import Message


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

        from ._chat_handler import register

        register()  # the server's own chat format, here too
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
_opening = threading.Lock()  # a warm start in a thread and a count in the chat's


def prompt_counter(path: str | Path | None = None) -> PromptCounter:
    """The exact counter for a GGUF (None: the bundled SmolLM2), with the chat format its
    server runs — available before the server starts. One per GGUF per process."""
    key = Path(path).expanduser().resolve() if path is not None else None
    with _opening:
        if key not in _counters:
            _counters[key] = _open(key)
        return _counters[key]


def _open(key: Path | None) -> PromptCounter:
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
    return probe


def _close_counters() -> None:
    for counter in _counters.values():
        counter.close()
    _counters.clear()
