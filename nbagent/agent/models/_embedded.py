"""The embedded model as the agent holds it: its window and output cap known from the
settings before its server runs (so the meter works at once), the server started on the
first request or earlier in the background (`start_in_background`, a warm start), the
waiting chat told what it waits for and for how long, and the server kept alive.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...engine._exceptions import LocalModelError
from ...engine._questions import SummaryCost
from ._llm import ChatModel, Completion, Message, TextCallback
from ._local_terms import local_summary_cost, summary_tokens
from ._tool_prompt import tools_text

LOCAL_MODEL = "local/smollm2"
BUNDLED_LABEL = "SmolLM2-135M"
STARTING = "starting the local model ({label})… {seconds:.0f} s"
TICK_S = 1.0  # how often the waiting chat's status line is renewed
logger = logging.getLogger("nbagent")


def _held(callback: Callable[[str], None]) -> Callable[[], Callable[[str], None] | None]:
    """`callback` as a listener holds it: a bound method weakly (its object may go away:
    an agent re-made in a notebook cell), any other callable as it is."""
    if inspect.ismethod(callback):
        return weakref.WeakMethod(callback)
    return lambda: callback


class EmbeddedModel:
    """The embedded model, started on first use or warmed in the background.

    `on_status(text)`, given when it is built, receives every status line (the starting
    line with its seconds, renewed about every second; a restart of a server that died).
    An agent given a model built before it (a found GGUF's `model()`, another agent's)
    `listen`s to its lines instead, and stops when it moves to another model: one model
    object, one server, whoever chats with it hears it start.
    """

    def __init__(self, n_ctx: int, max_tokens: int, *, path: str | None = None,
                 on_status: Callable[[str], None] | None = None) -> None:
        self.name = LOCAL_MODEL
        self.path = path  # a GGUF of the user's (NBAGENT_LOCAL_MODEL_PATH), else SmolLM2
        self.context_window: int | None = n_ctx
        self.max_output: int | None = max_tokens
        self.cuts_prompts = False  # its server refuses an over-long prompt (`LocalModel`)
        self._listeners: list[Callable[[], Callable[[str], None] | None]] = (
            [_held(on_status)] if on_status else [])
        self._model: ChatModel | None = None
        self._lock = threading.Lock()
        self._loading: threading.Thread | None = None
        self._loading_since = 0.0
        self._failure: BaseException | None = None
        self._released = False  # let go of (another model chosen): a start under way too
        self._skips: frozenset[str] = frozenset()

    @property
    def hides_builtins(self) -> bool:
        """True for the bundled SmolLM2-135M: it is shown the built-in tools only when a
        turn names one (`_local_terms`); a GGUF of the user's is shown every tool."""
        return self.path is None

    @property
    def skips(self) -> frozenset[str]:
        """The tools shown only when a turn names them: the built-ins, as the agent that
        holds this model says (`hides_builtins`); passed on to the served model."""
        return self._skips

    @skips.setter
    def skips(self, names: frozenset[str]) -> None:
        self._skips = frozenset(names)
        _told(self._model, self._skips)

    def listen(self, on_status: Callable[[str], None]) -> None:
        """Send this model's status lines to `on_status` too (once, however often asked).
        A bound method is held weakly: an agent that is gone stops listening by itself."""
        if on_status not in self._live():  # `==`: each `obj.method` is a new bound method
            self._listeners.append(_held(on_status))

    @property
    def on_status(self) -> Callable[[str], None]:
        """Says a status line to every listener (read-only: `listen` adds one)."""
        return self._status

    def unlisten(self, on_status: Callable[[str], None]) -> None:
        """Stop sending this model's status lines to `on_status`."""
        self._listeners = [held for held in self._listeners if held() not in (None, on_status)]

    def _live(self) -> list[Callable[[str], None]]:
        return [listener for listener in (held() for held in self._listeners) if listener]

    @property
    def label(self) -> str:
        """What the status line calls the model: SmolLM2-135M, or the user's GGUF."""
        return BUNDLED_LABEL if self.path is None else Path(self.path).stem

    @property
    def running(self) -> ChatModel | None:
        """The served model once its server runs (None before that; never starts it)."""
        return self._model

    @property
    def loading(self) -> bool:
        """True while a start is under way (in the background or for a chat)."""
        thread = self._loading
        return thread is not None and thread.is_alive()

    def start_in_background(self) -> bool:
        """Start the server in a background thread and return at once (a warm start).
        Idempotent: False when it runs or a start is already under way. The first chat
        then waits for this same start, not a second server. A failure is raised by
        the next request (which then tries again)."""
        with self._lock:
            self._released = False
            if self._model is not None or self.loading or self._failure is not None:
                return False  # running, starting, or a failure the next request reports
            self._loading_since = time.monotonic()
            self._loading = threading.Thread(target=self._load, name="nbagent-local-model",
                                             daemon=True)
            self._loading.start()
            return True

    def _serve(self) -> ChatModel:
        """Start the server (slow: seconds) and return the model on it."""
        from ._local_server import local_model

        assert self.context_window is not None and self.max_output is not None
        return local_model(self.context_window, self.max_output, self.path,
                           on_status=self._status)

    def _load(self) -> None:
        try:
            model = self._serve()
        except BaseException as failure:  # given to the chat that waits, never lost
            with self._lock:
                self._failure = failure
            return
        _told(model, self._skips)
        with self._lock:
            if not self._released:
                self._model = model
                return
        _let_go(model)  # chosen away from while it started: its server is not kept for it

    def release(self) -> None:
        """No longer in use (the agent chats with another model): its server is let go of
        — shared with other kernels, it ends when none uses it — and a start under way is
        let go of when it is done. The next request starts (or joins) it again."""
        with self._lock:
            self._released = True
            model, self._model = self._model, None
        if model is not None:
            _let_go(model)

    def started(self, tick: float = TICK_S) -> ChatModel:
        """The served model, its server started (or the start under way awaited) if need
        be, with a status line about every `tick` seconds. Raises `LocalModelError`."""
        if self._model is not None:
            return self._model
        self.start_in_background()
        thread = self._loading
        while thread is not None and thread.is_alive():
            self._status(STARTING.format(label=self.label,
                                         seconds=time.monotonic() - self._loading_since))
            thread.join(tick)
        with self._lock:
            if self._model is not None:
                return self._model
            failure, self._failure = self._failure, None
        if isinstance(failure, Exception):
            raise failure
        raise LocalModelError(f"the local model ({self.label}) did not start") from failure

    @property
    def summary_cost(self) -> SummaryCost:
        """What one summary costs this model (the compaction ladder weighs a call by it)."""
        return local_summary_cost(self.max_output)

    def for_summaries(self) -> ChatModel:
        """This model as the summarizer calls it: replies bounded at `summary_tokens`."""
        return _Summaries(self)

    def tool_prompt(self, tools: list[dict[str, Any]]) -> str | None:
        """The text `tools` add to this model's prompt (the lean tool list, not the JSON
        schemas; None: the schemas are counted). Before its server runs, the bundled
        model's: our chat handler's list of the tools it is shown."""
        shown = getattr(self._model, "tool_prompt", None)
        if callable(shown):
            text = shown(tools)
            return text if isinstance(text, str) else None
        if self.path is not None:  # a GGUF of the user's: its chat format is not known yet
            return None
        return tools_text([t for t in tools
                           if t.get("function", t).get("name") not in self._skips])

    def _status(self, text: str) -> None:
        listeners = self._live()
        for listener in listeners:
            listener(text)
        if not listeners:  # no one shows it: the log does
            logger.info("%s", text)

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: TextCallback | None,
                 tool_choice: str | dict[str, Any] | None = None) -> Completion:
        return self.started().complete(messages, tools, on_text=on_text, tool_choice=tool_choice)


def _told(model: ChatModel | None, skips: frozenset[str]) -> None:
    """The served model told which tools it is shown only when named (its own: the
    bundled one's server hides them, a GGUF of the user's shows every tool)."""
    if model is not None and getattr(model, "hides_builtins", False) is True:
        model.skips = skips  # type: ignore[attr-defined]


def _let_go(model: ChatModel) -> None:
    server = getattr(model, "server", None)
    release = getattr(server, "release", None)
    if callable(release):
        release()


class _Summaries:
    """The embedded model for summaries: its served model's `for_summaries`, started on
    the first call like any request."""

    def __init__(self, embedded: EmbeddedModel) -> None:
        self.embedded = embedded
        self.name = embedded.name
        self.context_window = embedded.context_window
        self.max_output: int | None = summary_tokens(embedded.max_output)

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: TextCallback | None,
                 tool_choice: str | dict[str, Any] | None = None) -> Completion:
        served = self.embedded.started()
        bounded = getattr(served, "for_summaries", None)
        model = bounded() if callable(bounded) else served
        return model.complete(messages, tools, on_text=on_text, tool_choice=tool_choice)
