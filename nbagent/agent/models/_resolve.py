"""Which model object a name means: a litellm name, the embedded local model
(`"local"`, `"local/smollm2"`, or no model configured), or a model object as it is;
and the model that writes summaries. The embedded server starts on the first call,
never when an agent is configured.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...engine._window import small_model_for
from .._settings import Settings
from ._llm import ChatModel, Completion, LiteLLMModel, Message, TextCallback

LOCAL_NAMES = ("local", "local/smollm2")
LOCAL_MODEL = "local/smollm2"


def is_local(name: str | None) -> bool:
    return name is None or name in LOCAL_NAMES


class EmbeddedModel:
    """The embedded model, started on first use: its window and output cap are known
    from the settings before the server runs, so the meter works at once."""

    def __init__(self, n_ctx: int, max_tokens: int, *, path: str | None = None,
                 on_start: Callable[[], Any] | None = None) -> None:
        self.name = LOCAL_MODEL
        self.path = path  # a GGUF of the user's (NBAGENT_LOCAL_MODEL_PATH), else SmolLM2
        self.context_window: int | None = n_ctx
        self.max_output: int | None = max_tokens
        self.on_start = on_start  # e.g. a "starting the local model…" status line
        self._model: ChatModel | None = None

    @property
    def running(self) -> ChatModel | None:
        """The served model once its server runs (None before the first request)."""
        return self._model

    def started(self) -> ChatModel:
        """The served model, its server started if need be (raises `LocalModelError`)."""
        if self._model is None:
            from . import _local as local

            if self.on_start is not None:
                self.on_start()
            assert self.context_window is not None and self.max_output is not None
            self._model = local.local_model(self.context_window, self.max_output, self.path)
        return self._model

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: TextCallback | None,
                 tool_choice: str | dict[str, Any] | None = None) -> Completion:
        return self.started().complete(messages, tools, on_text=on_text, tool_choice=tool_choice)


def chat_model(spec: str | ChatModel | None, settings: Settings) -> ChatModel:
    """The model object for `spec` (default: `NBAGENT_MODEL`, else the embedded model)."""
    chosen = spec if spec is not None else settings.model
    if chosen is None or isinstance(chosen, str) and is_local(chosen):
        return EmbeddedModel(settings.local_n_ctx, settings.local_max_tokens,
                             path=settings.local_model_path)
    return LiteLLMModel(chosen) if isinstance(chosen, str) else chosen


def request_counter(model: ChatModel) -> Callable[..., int] | None:
    """The model's exact count of a whole request (messages, tools), where it has one: the
    embedded model renders its chat template and tokenizes it in process, once running."""
    if isinstance(model, EmbeddedModel):
        model = model.running  # type: ignore[assignment]
        if model is None:
            return None
    counter = getattr(model, "count_request", None)
    return counter if callable(counter) else None


def compact_model(spec: str | ChatModel | None, chat: ChatModel, settings: Settings) -> ChatModel:
    """The model that writes summaries: `spec`, `NBAGENT_COMPACT_MODEL`, a small model
    of the chat model's provider, or the chat model itself."""
    chosen = spec if spec is not None else settings.compact_model
    if isinstance(chosen, str):
        return chat_model(chosen, settings)
    if chosen is not None:
        return chosen
    if isinstance(chat, LiteLLMModel) and not chat.api_base:
        small = small_model_for(chat.name)
        return LiteLLMModel(small) if small != chat.name else chat
    return chat
