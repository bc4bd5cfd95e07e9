"""The IPython magics: parse the arguments, make one call into nbagent's public API,
display the result. No chat logic and no settings live here. Loaded by
`%load_ext nbagent`.
"""

from __future__ import annotations

import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

import nbagent
from nbagent import Agent, NbagentError

INTERRUPTED = "interrupted — the session is intact; run the cell again to retry"
SMALL_LOCAL = "local/smollm2"  # the embedded default model's name
ERRORS: dict[int, str] = {}  # execution count → the error that cell raised (for Err[n])
KEEP_ERRORS = 50


@magics_class
class ChatMagics(Magics):  # type: ignore[misc]  # IPython is typed as Any here
    """`%%chat`, `%chat`, `%compact`, `%context`, `%pin` and `%nbagent`."""

    @magic_arguments()
    @argument("--model", "-m", help="Use this model (a litellm name, or 'local') from now on.")
    @argument("--new", action="store_true", help="Start a new session (a fresh history).")
    @argument("--no-tools", action="store_true", help="Offer the model no tools in this session.")
    @argument("--resume", nargs="?", const="latest", metavar="SESSION",
              help="Resume a session from its archive after a kernel restart (default: the "
              "latest).")
    @argument("text", nargs="*", help="The message, for the one-line form %%chat ....")
    @line_cell_magic
    def chat(self, line: str, cell: str | None = None) -> None:
        """Chat with the agent: the cell body is your message; the reply streams in as Markdown.

        %%chat [--model NAME] [--new] [--no-tools] [--resume [SESSION]]
        your message... ({name} inserts a variable; In[3], Out[3], Err[3] name a cell)

        %chat your one-line message

        Running the same cell again replaces its earlier exchange (the archive keeps it).
        A first line `/compact [focus]` compacts the conversation instead (the focus says
        what the summary must keep); `/context` shows what fills it.
        """
        args = parse_argstring(self.chat, line)
        text = (cell if cell is not None else " ".join(args.text)).strip()
        agent = _shown(lambda: nbagent.current(
            new=args.new or args.no_tools, model=args.model, resume=args.resume,
            builtin_tools=False if args.no_tools else None))
        if agent is None:
            return
        if args.resume:
            _text(f"nbagent: resumed session {agent.session_id} ({len(agent.history)} messages)")
        _notice(agent)
        command = text.splitlines()[0] if text else ""
        if command.startswith("/compact"):
            _compact(agent, command.removeprefix("/compact").strip() or None)
            return
        if command.startswith("/context"):
            _context(agent)
            return
        if not text:
            if args.resume:
                return
            raise UsageError("Nothing to send: write your message in the cell (or after %chat).")
        from . import ChatDisplay

        view = ChatDisplay()
        agent.events.subscribe(view)
        try:
            message = agent.expand_references(text, errors=ERRORS)
            result = agent.chat(message, on_text=view.on_text, exchange=_cell_id(self.shell))
        except KeyboardInterrupt:
            view.interrupted(INTERRUPTED)
            return
        except NbagentError as error:
            view.error(str(error))
            return
        finally:
            agent.events.unsubscribe(view)
        view.finish(result)
        if agent.model.name == SMALL_LOCAL and not agent.settings().local_model_path:
            _text("answered by SmolLM2-135M, a very small local model: expect weak answers "
                  "(%nbagent model=NAME for a stronger one)")
        _meter(agent)

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
        agent = _shown(nbagent.current)
        if agent is None:
            return
        if args.show:
            _compactions(agent)
        elif args.undo:
            if _shown(agent.undo_compaction, done=True) is not None:
                _text(f"nbagent: the last compaction was undone; "
                      f"{agent.context_state().tokens:,} tokens now")
                _meter(agent)
        else:
            _compact(agent, " ".join(args.focus).strip() or None)

    @magic_arguments()
    @argument("--compactions", action="store_true", help="List past compactions instead.")
    @line_magic
    def context(self, line: str) -> None:
        """Show what fills the context window: %context (or %context --compactions)."""
        args = parse_argstring(self.context, line)
        agent = _shown(nbagent.current)
        if agent is not None:
            (_compactions if args.compactions else _context)(agent)

    @magic_arguments()
    @argument("--list", action="store_true", help="List the pins.")
    @argument("--remove", type=int, metavar="N", help="Remove pin N (as --list numbers them).")
    @argument("text", nargs="*", help="The fact to keep verbatim through every compaction.")
    @line_magic
    def pin(self, line: str) -> None:
        """Keep a fact verbatim through every compaction: %pin the target column is churn_30d

        %pin --list shows the pins; %pin --remove N removes one.
        """
        args = parse_argstring(self.pin, line)
        agent = _shown(nbagent.current)
        if agent is None:
            return
        text = " ".join(args.text).strip()
        try:
            if args.remove is not None:
                pins = agent.unpin(args.remove - 1)
            elif text:
                pins = agent.pin(text)
            else:
                pins = agent.pins()
        except ValueError as error:
            raise UsageError(str(error)) from None
        _text("\n".join(f"{n}. {p}" for n, p in enumerate(pins, 1)) or "nbagent: no pins")

    @magic_arguments()
    @argument("words", nargs="*", help="key=value settings, 'reset' or 'meter'.")
    @line_magic
    def nbagent(self, line: str) -> None:
        """Show or change nbagent's configuration for this session.

        %nbagent                       what differs from the defaults, and the session
        %nbagent model=NAME window=8192 enable_python=true ...
        %nbagent model=local           back to the embedded model
        %nbagent reset                 start over with the defaults
        %nbagent meter                 show the context meter here

        Settable: any NBAGENT_* setting by its lower-case name (model, compact_model,
        window, auto_compact_window, disable_compact, enable_python, ...).
        """
        words = shlex.split(line)
        if words == ["meter"]:
            agent = _shown(nbagent.current)
            if agent is not None:
                _meter(agent)
            return
        if words == ["reset"]:
            agent = _shown(nbagent.reset)
            if agent is not None:
                _text(agent.describe())
            return
        changes: dict[str, str] = {}
        for word in words:
            key, sep, value = word.partition("=")
            if not sep:
                raise UsageError(f"Expected key=value, 'reset' or 'meter'; got {word!r}.")
            changes[key] = value
        agent = _shown(nbagent.current)
        if agent is None:
            return
        try:
            agent.configure(**changes)
        except ValueError as error:
            raise UsageError(str(error)) from None
        _text(agent.describe())


def _shown(call: Any, *, done: bool = False) -> Any:
    """Run `call`; an nbagent error is shown as one line instead of a traceback."""
    try:
        result = call()
    except NbagentError as error:
        from . import show_error

        show_error(str(error))
        return None
    return True if done and result is None else result


def _text(text: str) -> None:
    display({"text/plain": text}, raw=True)


def _notice(agent: Agent) -> None:
    notice = agent.take_notice()
    if notice:
        _text(f"nbagent: {notice}")


def _meter(agent: Agent) -> None:
    """The session's one meter widget, shown again in this cell: every copy updates live."""
    from . import ContextMeter

    display(ContextMeter.follow(agent))


def _compact(agent: Agent, focus: str | None) -> None:
    from . import show_decision

    decision = _shown(lambda: agent.compact(focus))
    if decision is not None:
        show_decision(decision)
        _meter(agent)


def _compactions(agent: Agent) -> None:
    from . import show_decision

    past = [d for d in agent.controller.decisions if d.action != "none"]
    if not past:
        _text("nbagent: no compaction yet in this session")
    for decision in past:
        show_decision(decision)


def _context(agent: Agent) -> None:
    from . import show_breakdown

    show_breakdown(agent.breakdown(), cost=agent.cost)


def _cell_id(shell: Any) -> str | None:
    """The notebook cell being run (JupyterLab sends its id), to replace its exchange."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:
        return None
    metadata = parent.get("metadata", {}) if isinstance(parent, dict) else {}
    cell = metadata.get("cellId") if isinstance(metadata, dict) else None
    return str(cell) if cell else None


def _escape_help(lines: list[str]) -> list[str]:
    """`%chat Which city has most visitors?` is a question, not a help request: run it."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines
    out = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("%chat ") and stripped.endswith("?") and not line.startswith(" "):
            rest = stripped.removeprefix("%chat ")
            line = f"get_ipython().run_line_magic('chat', {rest!r})\n"
        out.append(line)
    return out


def _record_error(result: Any) -> None:
    """After each cell: keep the error it raised, for `Err[n]` in a chat message."""
    error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
    count = getattr(result, "execution_count", None)
    if error is None or not isinstance(count, int):
        return
    import traceback

    ERRORS[count] = "".join(traceback.format_exception_only(type(error), error)).strip()
    for old in sorted(ERRORS)[:-KEEP_ERRORS]:
        del ERRORS[old]


def load(shell: Any) -> None:
    """Register the magics. `%%nbagent` is always an alias of `%%chat`; if another
    extension already owns `%%chat`, it keeps it and nbagent says so once."""
    import warnings

    from nbagent import NbagentWarning

    magics = ChatMagics(shell)
    owner = shell.magics_manager.magics["cell"].get("chat")
    taken = owner is not None and not isinstance(getattr(owner, "__self__", None), ChatMagics)
    if taken:
        warnings.warn("another extension already provides %%chat; use %%nbagent for nbagent",
                      NbagentWarning, stacklevel=2)
        for name in ("compact", "context", "pin", "nbagent"):
            shell.register_magic_function(getattr(magics, name), "line", name)
    else:
        shell.register_magics(magics)
        cleanup = shell.input_transformers_cleanup
        if _escape_help not in cleanup:
            cleanup.append(_escape_help)
    shell.register_magic_function(magics.chat, "cell", "nbagent")
    if _record_error not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _record_error)
