"""The IPython magics: parse the arguments, call the library, show the result.
No chat logic lives here. Loaded by `%load_ext nbagent`.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from . import _session
from ._agent import Agent
from ._exceptions import NbagentError
from ._llm import LiteLLMModel
from ._settings import ENV_PREFIX, Settings

_SETTABLE = {
    "model": "MODEL",
    "compact_model": "COMPACT_MODEL",
    "window": "MAX_CONTEXT_TOKENS",
    "auto_compact_window": "AUTO_COMPACT_WINDOW",
    "disable_compact": "DISABLE_COMPACT",
    "enable_python": "ENABLE_PYTHON",
}


@magics_class
class ChatMagics(Magics):
    """`%%chat`, `%chat`, `%compact`, `%context` and `%nbagent`."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self._meter_for: int | None = None  # id of the agent whose meter is on screen

    def _agent(self) -> Agent:
        return _session.current()

    def _current(self) -> Agent | None:
        """The session's agent, or None after showing why it could not be started."""
        try:
            return self._agent()
        except NbagentError as error:
            _show_error(str(error))
            return None

    def _ensure_meter(self, agent: Agent, *, force: bool = False) -> None:
        from nbagent.widgets import ContextMeter

        meter = next((h for h in agent.hooks if isinstance(h, ContextMeter)), None)
        if meter is None:
            meter = ContextMeter()
            agent.hooks.append(meter)
            from .events import ContextChanged

            meter(ContextChanged(agent.context_state(), agent.cost))
        if force or self._meter_for != id(agent):
            display(meter)
            self._meter_for = id(agent)

    @magic_arguments()
    @argument("--model", "-m", help="Use this model (a litellm name) for this session from now on.")
    @argument("--new", action="store_true", help="Start a new session (a fresh history).")
    @argument("--no-tools", action="store_true", help="Offer the model no tools in this session.")
    @argument("--resume", nargs="?", const="latest", metavar="SESSION",
              help="Resume a session from its archive after a kernel restart (default: the "
              "latest).")
    @argument("text", nargs="*", help="The message, for the one-line form %%chat ....")
    @line_cell_magic
    def chat(self, line: str, cell: str | None = None) -> None:
        """Chat with the agent: the cell body is your message; the reply streams in as Markdown.

        %%chat [--model NAME] [--new] [--no-tools]
        your message...

        %chat your one-line message

        A first line `/compact [focus]` compacts the conversation instead (the
        focus says what the summary must keep); `/context` shows what fills it.
        """
        args = parse_argstring(self.chat, line)
        text = cell if cell is not None else " ".join(args.text)
        try:
            agent = self._session(args)
        except NbagentError as error:
            _show_error(str(error))
            return
        if agent.notice:  # e.g. "using the embedded SmolLM2-135M; set NBAGENT_MODEL ..."
            print(f"nbagent: {agent.notice}")
            agent.notice = None
        command = text.strip().splitlines()[0] if text.strip() else ""
        if command.startswith("/compact"):
            self._compact(agent, command.removeprefix("/compact").strip() or None)
            return
        if command.startswith("/context"):
            self._context(agent)
            return
        if not text.strip():
            if args.resume:
                return
            raise UsageError("Nothing to send: write your message in the cell (or after %chat).")
        from nbagent.widgets import ChatDisplay

        self._ensure_meter(agent)
        view = ChatDisplay()
        agent.hooks.append(view)
        try:
            result = agent.chat(text.strip(), on_text=view.on_text)
        except NbagentError as error:
            _show_error(str(error))
            return
        finally:
            agent.hooks.remove(view)
        view.finish(result)

    def _session(self, args: Any) -> Agent:
        if args.resume:
            from ._archive import latest_session

            session = latest_session() if args.resume == "latest" else args.resume
            options = {"model": args.model} if args.model else {}
            agent = _session.set_current(Agent.resume(session, **options))
            print(f"nbagent: resumed session {session} ({len(agent.history)} messages)")
            return agent
        if args.new or args.no_tools:
            model = args.model or (self._agent_or_none() and _session.current().model)
            return _session.new_session(model=model, builtin_tools=not args.no_tools)
        agent = self._agent_or_none() or _session.current()
        if args.model:
            agent.model = LiteLLMModel(args.model)
        return agent

    def _agent_or_none(self) -> Agent | None:
        return _session._current

    @magic_arguments()
    @argument("--show", action="store_true", help="List this session's past compactions.")
    @argument("--undo", action="store_true", help="Put back the history as it was before the "
              "last compaction (only if nothing was added since).")
    @argument("focus", nargs="*", help="What the summary must keep, e.g. the exact column names.")
    @line_magic
    def compact(self, line: str) -> None:
        """Compact the conversation now: %compact [focus instructions for the summary].

        %compact --show lists past compactions; %compact --undo reverts the last one.
        """
        args = parse_argstring(self.compact, line)
        agent = self._current()
        if agent is None:
            return
        if args.undo:
            try:
                agent.undo_compaction()
            except NbagentError as error:
                _show_error(str(error))
                return
            print(f"nbagent: the last compaction was undone; {agent.context_state().tokens:,} "
                  "tokens now")
            return
        if args.show:
            self._show_compactions(agent)
            return
        self._compact(agent, " ".join(args.focus).strip() or None)

    def _compact(self, agent: Agent, focus: str | None) -> None:
        from nbagent.widgets import show_decision

        self._ensure_meter(agent)
        try:
            decision = agent.compact(focus)
        except NbagentError as error:
            _show_error(str(error))
            return
        show_decision(decision)

    @magic_arguments()
    @argument("--compactions", action="store_true", help="List past compactions instead.")
    @line_magic
    def context(self, line: str) -> None:
        """Show what fills the context window: %context (or %context --compactions)."""
        args = parse_argstring(self.context, line)
        agent = self._current()
        if agent is None:
            return
        if args.compactions:
            self._show_compactions(agent)
            return
        self._context(agent)

    def _show_compactions(self, agent: Agent) -> None:
        from nbagent.widgets import show_decision

        past = [d for d in agent.controller.decisions if d.action != "none"]
        if not past:
            print("nbagent: no compaction yet in this session")
        for decision in past:
            show_decision(decision)

    def _context(self, agent: Agent) -> None:
        from nbagent.widgets import show_breakdown

        controller = agent.controller
        breaker = (
            f"open after {controller.failure_count()} failures"
            if controller.breaker_open
            else f"closed ({controller.failure_count()} recent failures)"
        )
        show_breakdown(agent.breakdown(), breaker=breaker, cost=agent.cost)

    @line_magic
    def nbagent(self, line: str) -> None:
        """Show or set nbagent's configuration.

        %nbagent                      show the settings and the session
        %nbagent model=NAME window=8192 enable_python=true ...
        %nbagent meter                show the context meter again

        Settable: model, compact_model, window, auto_compact_window,
        disable_compact, enable_python (stored as NBAGENT_* variables).
        """
        words = shlex.split(line)
        if words == ["meter"]:
            self._ensure_meter(self._agent(), force=True)
            return
        for word in words:
            key, sep, value = word.partition("=")
            if not sep or key not in _SETTABLE:
                raise UsageError(
                    f"Expected key=value with a key among {', '.join(_SETTABLE)}; got {word!r}."
                )
            os.environ[ENV_PREFIX + _SETTABLE[key]] = value
            current = self._agent_or_none()
            if current is not None and key == "model":
                current.model = LiteLLMModel(value)
            if current is not None and key == "enable_python" and Settings.from_env().enable_python:
                from ._notebook_tools import notebook_tools

                for made in notebook_tools(current.namespace, current.store, enable_python=True):
                    current.add_tool(made)
        settings = Settings.from_env()
        lines = [
            f"{ENV_PREFIX}{name.upper()} = {value!r}"
            for name, value in settings.model_dump().items()
        ]
        agent = self._agent_or_none()
        if agent is not None:
            lines.append(
                f"session: model {agent.model.name}, {len(agent.history)} messages, "
                f"tools {', '.join(agent.tools)}"
            )
        print("\n".join(lines))


def _show_error(message: str) -> None:
    from nbagent.widgets import show_error

    show_error(message)


def load(shell: Any) -> None:
    """Register the magics. `%%nbagent` is always an alias of `%%chat`; if another
    extension already owns `%%chat`, it keeps it and nbagent says so once."""
    import warnings

    from ._exceptions import NbagentWarning

    magics = ChatMagics(shell)
    owner = shell.magics_manager.magics["cell"].get("chat")
    taken = owner is not None and not isinstance(getattr(owner, "__self__", None), ChatMagics)
    if taken:
        warnings.warn(
            "another extension already provides %%chat; use %%nbagent for nbagent",
            NbagentWarning,
            stacklevel=2,
        )
        for name in ("compact", "context", "nbagent"):
            shell.register_magic_function(getattr(magics, name), "line", name)
    else:
        shell.register_magics(magics)
    shell.register_magic_function(magics.chat, "cell", "nbagent")
