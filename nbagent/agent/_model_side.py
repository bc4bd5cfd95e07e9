"""`AgentModel`: an agent's answers to its session's model questions — the window (with
where the number came from), how many tokens a request occupies, the model's tokenizer,
the summarizer and the notebook-state block after a compaction (when the notebook context
is off). The agent owns one; the session asks it each time, so a changed model or setting
takes effect at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..engine._history import History
from ..engine._thresholds import thresholds
from ..engine._tokens import TextCounter
from ..engine._tracker import TokenTracker
from ..engine._window import WindowInfo, resolve_window
from ..engine.compaction import Summarizer, with_notebook_state
from ._settings import Settings
from .models._llm import ChatModel, LiteLLMModel, RetryPolicy, model_info, summarizer
from .models._resolve import compact_model, request_counter
from .models._server_info import probe_window

Message = dict[str, Any]


class Configured(Protocol):
    """What the answers read of the agent's configuration."""

    model: ChatModel
    retry: RetryPolicy

    def settings(self) -> Settings: ...

    def tool_schemas(self) -> list[dict[str, Any]]: ...

    def notebook_state(self) -> str | None: ...


class AgentModel:
    """The model questions, answered from an agent's configuration.

    Args:
        agent: the configuration (model, settings, tools, notebook state).
        compact_spec: the model that writes summaries (name or object; None: a small
            model of the chat model's provider).
        summarize: the user's own summarizer, used instead of the compaction model.
    """

    def __init__(self, agent: Configured, *, compact_spec: str | ChatModel | None,
                 summarize: Summarizer | None) -> None:
        self._agent = agent
        self._compact_spec = compact_spec
        self._user_summarizer = summarize
        self._summary: tuple[Summarizer | None, int | None] | None = None
        self._request_count: tuple[Any, int] = (None, 0)
        self._probed: set[int] = set()

    def settings(self) -> Settings:
        return self._agent.settings()

    def name(self) -> str:
        return self._agent.model.name

    def resolve_window(self, learned: int | None) -> WindowInfo:
        model = self._agent.model
        return resolve_window(model.name, settings=self.settings(), model_info=model_info,
                              reported=(model.context_window, model.max_output),
                              learned=learned)

    def probe(self) -> None:
        """Ask a local OpenAI-compatible server for its model's real window, once per model
        object (network I/O: called at the start of a chat or a compaction, never by a
        getter)."""
        model = self._agent.model
        if (isinstance(model, LiteLLMModel) and model.api_base and model.context_window is None
                and id(model) not in self._probed):
            self._probed.add(id(model))
            found = probe_window(model.api_base, model.name)
            if found is not None:
                model.context_window = found[0]

    def count(self, history: History, tracker: TokenTracker) -> int:
        """Tokens the next request would occupy: the model's own count of the whole request
        where it has one (cached per history state), else the tracker's."""
        agent = self._agent
        exact = request_counter(agent.model)
        schemas = agent.tool_schemas()
        if exact is None:
            return tracker.count(history, model=agent.model.name, tools=schemas)
        key = (id(history), history.generation, len(history),
               tuple(s["function"]["name"] for s in schemas), id(agent.model))
        if self._request_count[0] != key:
            last = history[-1]
            # a finished turn: the next request opens a new one, with the tools shown
            done = last["role"] == "assistant" and not last.get("tool_calls")
            count = exact(history.messages, schemas, "auto" if done else None)
            self._request_count = (key, int(count))
        return self._request_count[1]

    def count_text(self) -> TextCounter | None:
        """The model's own tokenizer, when it has one (else the estimator counts)."""
        exact: Callable[[], TextCounter] | None = getattr(self._agent.model, "count_text", None)
        return exact() if callable(exact) else None

    def summarizer(self) -> tuple[Summarizer | None, int | None]:
        """The summarizer and the input window of the model behind it (None when the user
        passed their own summarizer); built once per chat/compaction model."""
        if self._summary is None:
            self._summary = self._summarizing()
        return self._summary

    def use_compact_model(self, spec: str | ChatModel | None) -> None:
        """Summaries from `spec` from now on (None: the default for the chat model)."""
        self._compact_spec = spec
        self._summary = None

    def model_changed(self) -> None:
        """The chat model changed: the default summarizer follows it."""
        self._summary = None

    def refresh(self, messages: list[Message]) -> list[Message]:
        """After a compaction: one fresh notebook-state block replaces the previous one,
        unless the notebook context is on: then the live state already reaches the model
        (a note the next request adds if the latest left the history, or the listing on
        each request), no block is written and a stale one goes. A block sits at the front
        of the history, so replacing it would rewrite the whole cached prefix on every
        compaction, even a snip that changed only later messages."""
        live = self.settings().notebook_context
        return with_notebook_state(messages, None if live else self._agent.notebook_state())

    def _summarizing(self) -> tuple[Summarizer | None, int | None]:
        if self._user_summarizer is not None:
            return self._user_summarizer, None
        agent, settings = self._agent, self.settings()
        writer = compact_model(self._compact_spec, agent.model, settings)
        window = thresholds(resolve_window(
            writer.name, settings=settings, model_info=model_info,
            reported=(writer.context_window, writer.max_output))).effective_window
        return summarizer(writer, agent.retry, timeout=lambda: min(
            self.settings().summary_timeout_s, self.settings().max_chat_seconds)), window
