"""`Agent`: what a user talks to. It holds the model, system prompt, tools, history,
token tracker, compaction controller and hooks — data. The loop that drives a
chat lives in `_loop` as plain functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import __main__

from ._archive import Archive, ArchiveError, new_session_id, read_records, session_path
from ._breakdown import Breakdown, context_breakdown
from ._controller import CompactionController, Decision, compact_model_for
from ._history import History
from ._llm import ChatModel, LiteLLMModel, RetryPolicy, logger, summarizer
from ._notebook_tools import notebook_tools
from ._settings import Settings
from ._thresholds import ContextState
from ._tools import OutputStore, Tool, as_tool
from ._tracker import TokenTracker
from ._window import ModelInfoLookup, _litellm_info
from .events import Compacted, ContextChanged, Event, Retrying

LOCAL_MODEL = "local/smollm2"
DEFAULT_SYSTEM = (
    "You are a data-science assistant working inside the user's Jupyter notebook. Use the "
    "tools to look at their variables and files before answering; quote exact names; keep "
    "answers short and concrete."
)

StopReason = str  # "done", "max_rounds", "loop", "timeout"


@dataclass
class ChatResult:
    """How one `Agent.chat` ended: the final text, and, when a limit stopped it, why."""

    text: str
    stop_reason: StopReason = "done"
    stop_message: str | None = None
    rounds: int = 0
    cost: float = 0.0
    decisions: list[Decision] = field(default_factory=list)

    def __str__(self) -> str:
        return self.text if self.stop_message is None else f"{self.text}\n\n{self.stop_message}"


class Agent:
    """A tool-using chat agent whose history never outgrows the model's window.

        agent = Agent(model="anthropic/claude-sonnet-4-20250514", tools=[describe])
        result = agent.chat("Which columns of sales_df have missing values?")
        print(result.text, agent.context_state().percent_left)

    Args:
        model: a litellm model name or a model object (`LiteLLMModel`,
            `nbagent.testing.ScriptedModel`); default `NBAGENT_MODEL`, else the
            embedded local model (`"local/smollm2"`, no API key needed).
        compact_model: the model that writes summaries (name or object);
            default `NBAGENT_COMPACT_MODEL`, else a small model of the same provider.
        tools: functions (or `@tool`s) the model may call, beside the built-ins.
        system: the system prompt; it is never edited by compaction.
        namespace: the variables the built-in tools see (default: `__main__`'s).
        builtin_tools: offer list_variables, describe_variable, read_file, read_output.
        enable_python: also offer the python tool (default `NBAGENT_ENABLE_PYTHON`).
        settings: fixed settings; by default read from the environment at each use.
        retry: how transient model failures are retried.
        summarize: the compaction summarizer; by default the compaction model.
        session_id: names the session's archive file (default: a new, dated id);
            `archive=False` keeps no archive.
    """

    def __init__(
        self,
        model: str | ChatModel | None = None,
        *,
        compact_model: str | ChatModel | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        system: str = DEFAULT_SYSTEM,
        namespace: dict[str, Any] | None = None,
        builtin_tools: bool = True,
        enable_python: bool | None = None,
        settings: Settings | None = None,
        retry: RetryPolicy | None = None,
        summarize: Callable[[list[dict[str, Any]]], Any] | None = None,
        model_info: ModelInfoLookup | None = _litellm_info,
        session_id: str | None = None,
        archive: bool = True,
    ) -> None:
        self._settings = settings
        self.session_id = session_id or new_session_id()
        self.archive: Archive | None = Archive(self.session_id) if archive else None
        current = self.settings()
        chosen = model if model is not None else current.model
        self.notice: str | None = None  # said once to the user (the magics show it)
        if chosen is None or chosen == LOCAL_MODEL:
            from . import local

            served = local.server(current.local_n_ctx)
            chosen = served.model()
            compact_model = compact_model or served.model(local.SUMMARY_TOKENS)
            if model is None:
                self.notice = local.NOTICE
                logger.warning(local.NOTICE)
        self.model: ChatModel = LiteLLMModel(chosen) if isinstance(chosen, str) else chosen
        self.system = system
        self.history = History([{"role": "system", "content": system}])
        self.tracker = TokenTracker()
        self.store = OutputStore()
        self.namespace = namespace if namespace is not None else vars(__main__)
        python = current.enable_python if enable_python is None else enable_python
        offered = (
            notebook_tools(self.namespace, self.store, enable_python=python,
                           archive=lambda: self.archive)
            if builtin_tools
            else []
        )
        self.tools: dict[str, Tool] = {}
        candidates: list[Tool | Callable[..., Any]] = [*offered, *tools]
        for candidate in candidates:
            self.add_tool(candidate)
        self.hooks: list[Callable[[Event], Any]] = []
        self.retry = retry or RetryPolicy()
        if self.retry.on_retry is None:
            self.retry.on_retry = lambda event: self.emit(Retrying(event))
        self.cost = 0.0
        compact = (LiteLLMModel(compact_model) if isinstance(compact_model, str)
                   else compact_model or self._compact_model())
        self.controller = CompactionController(
            summarize=summarize or summarizer(compact, self.retry),
            summarizer_model=compact.name,
            tracker=self.tracker,
            count=lambda history, name: self.tracker.count(
                history, model=name, tools=self.tool_schemas()
            ),
            settings=settings,
            model_info=model_info,
        )
        self.controller.post_compact.append(self._on_compacted)
        if self.archive is not None:
            self.archive.write("session", {"model": self.model.name, "id": self.session_id})
            self._connect_archive(self.archive)

    def _connect_archive(self, archive: Archive, *, include_current: bool = True) -> None:
        """Everything added, every full output, every compaction (write-ahead), every record."""
        for message in self.history if include_current else ():
            archive.write("message", {"message": message})
        self.history.listeners.append(
            lambda message: archive.write("message", {"message": message}))
        self.store.on_put = lambda ref, text: archive.write("output", {"ref": ref, "text": text})
        self.store.loader = lambda ref: next(
            (r["text"] for r in read_records(archive.path) if r["kind"] == "output"
             and r["ref"] == ref), None) if archive.failed is None else None
        self.controller.before_rewrite.append(
            lambda messages: archive.write("rewrite", {"messages": messages}, sync=True))
        self.controller.post_compact.append(
            lambda decision: archive.write("decision", {"decision": decision.model_dump()}))

    @classmethod
    def resume(cls, session: str | Path, **options: Any) -> Agent:
        """Rebuild a session from its archive (after a kernel restart): the history as it
        last stood, the full tool outputs, and the breaker's failure count. `session` is a
        session id or an archive file's path; `options` go to `Agent` (e.g. `model=`)."""
        path = Path(session)
        if not path.is_file():
            path = session_path(str(session))
        messages: list[dict[str, Any]] = []
        outputs: dict[str, str] = {}
        failures = 0
        for record in read_records(path):
            if record["kind"] == "session" and "model" not in options:
                from .local import SERVED_AS

                named = str(record["model"])
                options["model"] = LOCAL_MODEL if named == SERVED_AS else named
            elif record["kind"] == "message":
                messages.append(record["message"])
            elif record["kind"] == "rewrite":
                messages = list(record["messages"])
            elif record["kind"] == "output":
                outputs[record["ref"]] = record["text"]
            elif record["kind"] == "decision":
                failures = int(record["decision"].get("failures", 0))
        if not messages or messages[0].get("role") != "system":
            raise ArchiveError(f"{path.name} holds no session to resume")
        options.setdefault("system", messages[0]["content"])
        agent = cls(session_id=path.stem, archive=False, **options)
        agent.history.replace(messages)
        agent.store.outputs.update(outputs)
        agent.controller._failures = failures
        agent.archive = Archive(path.stem, path.parent.parent)
        agent._connect_archive(agent.archive, include_current=False)
        return agent

    def settings(self) -> Settings:
        return self._settings if self._settings is not None else Settings.from_env()

    def _compact_model(self) -> ChatModel:
        configured = self.settings().compact_model
        if configured:
            return LiteLLMModel(configured)
        if isinstance(self.model, LiteLLMModel) and not self.model.api_base:
            small = compact_model_for(self.model.name, self.settings())
            return LiteLLMModel(small) if small != self.model.name else self.model
        return self.model

    def add_tool(self, candidate: Tool | Callable[..., Any]) -> Tool:
        """Offer one more tool (a function or a `@tool`); a tool of the same name is replaced."""
        made = as_tool(candidate)
        self.tools[made.name] = made
        return made

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema for t in self.tools.values()]

    def emit(self, event: Event) -> None:
        for hook in list(self.hooks):
            hook(event)

    def _on_compacted(self, decision: Decision) -> None:
        self.cost += decision.cost or 0.0
        self.emit(Compacted(decision))
        self.emit(ContextChanged(self.context_state(), self.cost))

    def context_state(self) -> ContextState:
        """How full the context is now (what the meter shows)."""
        return self.controller.state(self.history, self.model.name)

    def breakdown(self) -> Breakdown:
        """What fills the window now, by kind (what `%context` shows)."""
        return context_breakdown(self.history, self.tool_schemas(), self.context_state())

    def chat(
        self,
        text: str,
        *,
        on_text: Callable[[str], None] | None = None,
        tool_choice: str | None = None,
    ) -> ChatResult:
        """Send a user message and run the tool loop until the model answers.

        `on_text` receives the reply's text as it streams. `tool_choice` names a
        tool the model must call first ("none" forbids tools; later requests of
        the turn are free to choose). Raises
        `ModelCallError` (with what to do) when the model cannot be reached or
        the prompt cannot be made to fit; the history keeps every message.
        """
        from ._loop import run_chat

        return run_chat(self, text, on_text, tool_choice)

    def compact(self, focus: str | None = None) -> Decision:
        """Compact now (what `%compact` does), with optional focus instructions."""
        return self.controller.compact_now(self.history, model=self.model.name, focus=focus)

    def undo_compaction(self) -> None:
        """Restore the history as it was before the last compaction (`%compact --undo`),
        as long as nothing was added since; otherwise `NbagentError` says why."""
        self.controller.undo(self.history)
        self.emit(ContextChanged(self.context_state(), self.cost))
