"""`AgentModel`: an agent's answers to its session's model questions — the window (with
where the number came from: a local runtime's own API, or a conservative window shown as
assumed when a local server reports none), how many tokens a request occupies, the
model's tokenizer, the summarizer and the notebook-state block after a compaction (when
the notebook context is off). The agent owns one; each session asks it through its
`SessionAnswers` (the engine's `ModelQuestions` with the session's learned limit and
tracker), so a changed model or setting takes effect at once. The window is resolved
once per change of model, settings or learned limit, and the count once per change of the
history, the tools or what the tracker learnt; every other ask reads the kept answer.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Protocol

from ..engine._history import History
from ..engine._questions import CostedSummarizer, SummaryCost
from ..engine._thresholds import Limits, thresholds
from ..engine._tokens import TextCounter, count_tools_tokens, estimate_tokens
from ..engine._tracker import TokenTracker
from ..engine._window import WindowInfo, resolve_window
from ..engine.compaction import Summarizer, with_notebook_state
from ._model_traits import sees_images
from ._settings import Settings
from .models._call import RetryPolicy, summarizer
from .models._llm import ChatModel, LiteLLMModel, model_info
from .models._resolve import compact_model, request_counter
from .models._server_info import (
    UNKNOWN_LOCAL_WINDOW,
    ServerWindow,
    is_local_address,
    names_runtime,
    probe_window,
    runtime_base,
)
from .tools._images import without_images

Message = dict[str, Any]


class Configured(Protocol):
    """What the answers read of the agent's configuration."""

    model: ChatModel
    retry: RetryPolicy

    def settings(self) -> Settings: ...

    def tool_schemas(self, limits: Limits[Settings] | None = None) -> list[dict[str, Any]]: ...

    def notebook_state(self, limits: Limits[Settings] | None = None) -> str | None: ...


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
        self._summary: tuple[Summarizer | None, int | None, bool] | None = None
        self._counted: tuple[Any, ...] | None = None  # the last count and what it read
        # what the current model's server said of its window (asked at a chat's start)
        self._served: tuple[ChatModel, ServerWindow | None] | None = None
        self._window: tuple[ChatModel, Settings, Any, WindowInfo] | None = None
        self._limits: Limits[Settings] | None = None
        self._timeout_s = 0.0  # a summary's, from its compaction's settings (`summarizer`)

    def settings(self) -> Settings:
        return self._agent.settings()

    def for_agent(self, agent: Configured) -> AgentModel:
        """The same compaction choices (the compaction model, the user's summarizer)
        answered for another configuration: a delegated task's, on its own model."""
        return AgentModel(agent, compact_spec=self._compact_spec,
                          summarize=self._user_summarizer)

    def name(self) -> str:
        return self._agent.model.name

    def limits(self, learned: int | None) -> Limits[Settings]:
        """The settings now, the window under them and its thresholds: one snapshot (the
        same object until one changes), which a turn, a compaction or a reading takes once."""
        settings = self.settings()
        window = self.resolve_window(learned, settings)
        last = self._limits
        if last is None or last.window is not window or last.settings is not settings:
            last = self._limits = Limits.of(window, settings)
        return last

    def resolve_window(self, learned: int | None, settings: Settings | None = None
                       ) -> WindowInfo:
        """The model's window (no I/O) under `settings` (default: now): what the model says
        of itself, else what its local server said (`probe`), else a conservative window for
        a local server that says none (source "assumed", never the cloud default), else
        litellm and the table."""
        model = self._agent.model
        asked = self._served is not None and self._served[0] is model
        served = self._served[1] if self._served is not None and asked else None
        settings = settings if settings is not None else self.settings()
        # computed once per change of what decides it: the model object and what it says
        # of itself, its server's answer, the settings (the same object until they change)
        # and the learned limit
        options = getattr(model, "options", None)  # Ollama's num_ctx decides its window
        key = (model.context_window, model.max_output, asked, served, learned,
               repr(options) if options else None)
        if self._window is not None and self._window[0] is model and \
                self._window[1] is settings and self._window[2] == key:
            return self._window[3]
        info = self._resolve(model, served, settings, learned, probed=asked)
        self._window = (model, settings, key, info)
        return info

    def _resolve(self, model: ChatModel, served: ServerWindow | None, settings: Settings,
                 learned: int | None, *, probed: bool) -> WindowInfo:
        window, source = model.context_window, None
        assumed = None
        asked = model.options.get("num_ctx") if isinstance(model, LiteLLMModel) and \
            model.name.startswith("ollama") else None
        if window is None and isinstance(asked, int) and asked > 0:
            # Ollama's native API loads the model with the num_ctx each request sends
            window, source = asked, "num_ctx sent with each request (Ollama's native API)"
        elif window is None and served is not None:
            if served.assumed:
                assumed = (served.window, served.detail)
            else:
                window, source = served.window, served.detail
        elif window is None and self._local_runtime(model):
            assumed = (UNKNOWN_LOCAL_WINDOW, "a local server that reports no window (set "
                       "NBAGENT_MAX_CONTEXT_TOKENS)" if probed else
                       "a local server not asked yet (asked at the first chat)")
        return resolve_window(model.name, settings=settings, model_info=model_info,
                              reported=(window, model.max_output), learned=learned,
                              reported_source=source, assumed=assumed)

    @staticmethod
    def _local_runtime(model: ChatModel) -> bool:
        """A model served by a local runtime, whose trained length (litellm, the table) is
        not the window it serves: a runtime's prefix (`ollama_chat/`...), or a model
        litellm does not know at a loopback or private address (a known model there is
        a proxy to a provider, whose window litellm knows)."""
        if not isinstance(model, LiteLLMModel):
            return False
        if names_runtime(model.name):
            return True
        return bool(model.api_base) and is_local_address(model.api_base or "") and \
            model_info(model.name) is None

    def probe(self, *, tentative: bool = False) -> None:
        """Ask a local server for its model's real window: once per model object, and again
        at the next chat while Ollama or LM Studio have not loaded the model yet (network
        I/O, bounded: called at the start of a chat or a compaction, never by a getter).
        `tentative` (a model switch): no answer is not kept, so the first chat asks again —
        the server may simply not be up yet."""
        model = self._agent.model
        if not isinstance(model, LiteLLMModel) or model.context_window is not None:
            return
        if self._served is not None and self._served[0] is model and not (
                self._served[1] is not None and self._served[1].until_loaded):
            return
        base = runtime_base(model.name, model.api_base)
        answer = probe_window(base, model.name) if base else None
        self._served = None if answer is None and tentative else (model, answer)

    def count(self, history: History, tracker: TokenTracker,
              limits: Limits[Settings] | None = None) -> int:
        """Tokens the next request would occupy (its tools as offered under `limits`): the
        model's own count of the whole request where it has one, else the tracker's. Counted
        once per change of the history (its generation and length), the tool schemas, the
        model and its counter, and what the tracker learnt (`version`): a turn's later asks
        (the blocking check, the meter after each message) read this count."""
        agent = self._agent
        exact = request_counter(agent.model)
        schemas = agent.tool_schemas(limits)
        key = (history.generation, len(history), tracker.version)
        cached = self._counted
        if cached is not None and cached[0]() is history and cached[1] == key and \
                cached[2] is schemas and cached[3] is agent.model and cached[4] is tracker \
                and cached[5] == exact:
            return int(cached[6])
        count = self._count(self._as_sent(history), tracker, schemas, exact)
        self._counted = (weakref.ref(history), key, schemas, agent.model, tracker, exact, count)
        return count

    def _as_sent(self, history: History) -> History:
        """`history` as the request carries it to this model: a round's figures go as their
        cleared text to a model that reads no images (one chosen after they were sent)."""
        if not history.has_images or sees_images(self._agent.model):
            return history
        messages = history.messages  # a copy: compared with itself below, not a new one
        sent = without_images(messages)
        # a copy only when there is something to clear; the tracker's anchor (the last real
        # usage) belongs to the stored history, so a copy is estimated whole — the anchor was
        # another model's usage anyway, since a model that saw the figures read them
        return history if sent is messages else History(sent)

    def _count(self, history: History, tracker: TokenTracker, schemas: list[dict[str, Any]],
               exact: Callable[..., int] | None) -> int:
        agent = self._agent
        if exact is None:
            lean = self._tool_prompt(schemas)
            if lean is None:
                return tracker.count(history, model=agent.model.name, tools=schemas)
            # the tools as the model's prompt shows them (the embedded model before its
            # server runs), not their JSON schemas
            counted = (tracker.count_text or estimate_tokens)(lean)
            return tracker.count(history, model=agent.model.name) + round(
                tracker.ratio(agent.model.name) * counted)
        last = history[-1]
        # a finished turn: the next request opens a new one, with the tools shown
        done = last["role"] == "assistant" and not last.get("tool_calls")
        return int(exact(history.messages, schemas, "auto" if done else None))

    def count_sent(self, history: History, messages: list[Message], added: str,
                   tool_choice: str | dict[str, Any] | None, tracker: TokenTracker,
                   limits: Limits[Settings] | None = None) -> int:
        """What a request being sent occupies (under `limits`): the model's own count of it,
        else the history's and, calibrated, the text it `added` (the notebook context)."""
        agent = self._agent
        exact = request_counter(agent.model)
        if exact is not None:
            return int(exact(messages, agent.tool_schemas(limits), tool_choice))
        extra = (tracker.count_text or estimate_tokens)(added) if added else 0
        return self.count(history, tracker, limits) + round(
            tracker.ratio(agent.model.name) * extra)

    def tools_tokens(self, schemas: list[dict[str, Any]], count_text: TextCounter | None
                     ) -> int:
        """What offering `schemas` costs in a request to this model: the text its prompt
        shows them as, where the model says (the embedded model's lean tool list), else
        the JSON schemas; counted with `count_text` (None: the estimator)."""
        counter = count_text or estimate_tokens
        lean = self._tool_prompt(schemas)
        return counter(lean) if lean is not None else count_tools_tokens(schemas, counter)

    def _tool_prompt(self, schemas: list[dict[str, Any]]) -> str | None:
        shown: Callable[[list[dict[str, Any]]], str | None] | None = getattr(
            self._agent.model, "tool_prompt", None)
        return shown(schemas) if callable(shown) else None

    def count_text(self) -> TextCounter | None:
        """The model's own tokenizer, when it has one (else the estimator counts)."""
        exact: Callable[[], TextCounter] | None = getattr(self._agent.model, "count_text", None)
        return exact() if callable(exact) else None

    def summarizer(self, learned: int | None = None, limits: Limits[Settings] | None = None
                   ) -> tuple[Summarizer | None, int | None]:
        """The summarizer (bounded in time by `limits`' settings, the compaction's) and the
        input window of the model behind it (None for the user's own summarizer); built once
        per chat/compaction model. When the chat model writes its own summaries, its window
        is the chat's, `learned` limit included: one sized larger would overflow again."""
        limits = limits if limits is not None else self.limits(learned)
        settings = limits.settings
        self._timeout_s = min(settings.summary_timeout_s, settings.max_chat_seconds)
        if self._summary is None:
            self._summary = self._summarizing(settings)
        summarize, window, own = self._summary
        if own:
            window = limits.thresholds.effective_window
        return summarize, window

    def use_compact_model(self, spec: str | ChatModel | None) -> None:
        """Summaries from `spec` from now on (None: the default for the chat model)."""
        self._compact_spec = spec
        self._summary = None

    def model_changed(self) -> None:
        """The chat model changed: the default summarizer follows it."""
        self._summary = None

    def refresh(self, messages: list[Message], limits: Limits[Settings] | None = None
                ) -> list[Message]:
        """After a compaction: one fresh notebook-state block replaces the previous one,
        unless the notebook context is on: then the live state already reaches the model
        (a note the next request adds if the latest left the history, or the listing on
        each request), no block is written and a stale one goes. A block sits at the front
        of the history, so replacing it would rewrite the whole cached prefix on every
        compaction, even a snip that changed only later messages."""
        live = (limits.settings if limits is not None else self.settings()).notebook_context
        return with_notebook_state(messages, None if live else self._agent.notebook_state(
            limits))

    def _summarizing(self, settings: Settings) -> tuple[Summarizer | None, int | None, bool]:
        """(summarizer, its window, whether the chat model writes the summaries)."""
        if self._user_summarizer is not None:
            return self._user_summarizer, None, False
        agent = self._agent
        writer = compact_model(self._compact_spec, agent.model, settings)
        own = writer is agent.model
        window = None if own else thresholds(resolve_window(
            writer.name, settings=settings, model_info=model_info,
            reported=(writer.context_window, writer.max_output))).effective_window
        bounded = getattr(writer, "for_summaries", None)  # a model whose summaries are
        # bounded below its replies (a local model's)
        made = summarizer(bounded() if callable(bounded) else writer, agent.retry,
                          timeout=lambda: self._timeout_s)
        cost = getattr(writer, "summary_cost", None)  # what a call costs, if the model says
        if isinstance(cost, SummaryCost):
            return CostedSummarizer(made, cost), window, own
        return made, window, own


class SessionAnswers:
    """The engine's model questions (`ModelQuestions`, the one protocol) answered for one
    session: the agent's answers with the session's own state — the limit the provider
    stated (`learned`, read at each call) and its tracker. The session's controller asks
    it, and the session reads its window from it."""

    def __init__(self, model: AgentModel, *, learned: Callable[[], int | None],
                 tracker: TokenTracker) -> None:
        self.model, self.tracker, self._learned = model, tracker, learned

    def settings(self) -> Settings:
        return self.model.settings()

    def name(self) -> str:
        return self.model.name()

    def limits(self) -> Limits[Settings]:
        """The settings, the window the requests must fit (the model's, or the limit the
        provider stated: source "learned") and its thresholds, in one snapshot."""
        return self.model.limits(self._learned())

    def window(self) -> WindowInfo:
        return self.limits().window

    def count(self, history: History, limits: Limits[Settings] | None = None) -> int:
        return self.model.count(history, self.tracker, limits)


    def count_text(self) -> TextCounter | None:
        return self.model.count_text()

    def summarizer(self, limits: Limits[Settings] | None = None
                   ) -> tuple[Summarizer | None, int | None]:
        return self.model.summarizer(self._learned(), limits)

    def refresh(self, messages: list[Message], limits: Limits[Settings] | None = None
                ) -> list[Message]:
        return self.model.refresh(messages, limits)
