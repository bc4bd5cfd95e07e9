"""Which model object a name means: a litellm name, the embedded local model
(`"local"`, `"local/smollm2"`, or no model configured; `EmbeddedModel`), or a model
object as it is; and the model that writes summaries. The embedded server starts on the
first call (or a warm start), never when an agent is configured.
"""

from __future__ import annotations

from collections.abc import Callable

from ...engine._window import small_model_for
from .._settings import Settings
from ._embedded import LOCAL_MODEL, EmbeddedModel
from ._llm import ChatModel, LiteLLMModel

LOCAL_NAMES = ("local", LOCAL_MODEL)
__all__ = ["LOCAL_MODEL", "LOCAL_NAMES", "EmbeddedModel", "chat_model", "compact_model",
           "is_local", "request_counter"]


def is_local(name: str | None) -> bool:
    return name is None or name in LOCAL_NAMES


def chat_model(spec: str | ChatModel | None, settings: Settings, *,
               on_status: Callable[[str], None] | None = None) -> ChatModel:
    """The model object for `spec` (default: `NBAGENT_MODEL`, else the embedded model,
    built with `on_status` for its status lines). An embedded model built elsewhere is
    used as it is, `on_status` listening to its lines too."""
    chosen = spec if spec is not None else settings.model
    if chosen is None or isinstance(chosen, str) and is_local(chosen):
        return EmbeddedModel(settings.local_n_ctx, settings.local_max_tokens,
                             path=settings.local_model_path, on_status=on_status)
    if isinstance(chosen, EmbeddedModel) and on_status is not None:
        chosen.listen(on_status)
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
