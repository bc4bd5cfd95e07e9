"""The IPython magics: read the line as typed, make one call into nbagent's public API,
display the result. No chat logic and no settings live here. Loaded by
`%load_ext nbagent`. Lines are never expanded by IPython (`{df}` and `$x` reach nbagent,
whose own `{name}` expansion is the same in `%chat` and `%%chat`).
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand

import nbagent
from nbagent import NbagentError
from nbagent.text import tokens

from . import _cells_seen, _code_runs, _run, _subcommands
from ._parse import parse_line
from ._run import ERRORS
from ._texts import NOTHING_TO_SEND

KEEP_ERRORS = 50


@magics_class
class ChatMagics(Magics):  # type: ignore[misc]  # IPython is typed as Any here
    """nbagent's magics: each `@line_magic` method below is one, its docstring its `--help`
    and its options its row of `MAGIC_OPTIONS` (`_parse`); `chat` is also the `%%chat` cell.
    `load` registers them from this class's own table (`magics`), never a list of names.
    """

    @no_var_expand
    @line_cell_magic
    def chat(self, line: str, cell: str | None = None) -> None:
        """Chat with the agent: the cell body is your message; the reply streams in as Markdown.

        %%chat [--model NAME] [--new] [--no-tools] [--resume [SESSION]] [--cell]
        your message... ({name} inserts a variable; In[3], Out[3], Err[3] name a cell)

        %chat [options] your one-line message, sent exactly as typed

        Options go before the message; `--` ends them (%chat -- -1 is a number?).
        --model NAME, -m NAME   use this model (a litellm name, or 'local') from now on
        --new                   start a new session (a fresh history)
        --no-tools              a new session that offers the model no tools
        --sessions              list the sessions kept: number, notebook, dates, first
                                request
        --resume [SESSION]      resume a session from its archive: its number in
                                --sessions, its id, or the latest (the default)
        --cell                  ask for code: the reply's code becomes a new cell below

        Running the same cell again replaces its earlier exchange (the archive keeps it).
        A first line `/compact [focus]` compacts the conversation instead (the focus says
        what the summary must keep); `/context` shows what fills it.
        """
        args = parse_line(line, magic="chat")
        if args.flag("help"):
            return _run.show_help(self.chat)
        if args.flag("sessions"):
            return _run.sessions()
        text = (cell if cell is not None else args.text).strip()
        resume = args.options.get("resume")
        resume_id: str | int | None = None if resume is None else (
            resume if isinstance(resume, str) else "latest")
        if isinstance(resume_id, str) and resume_id.isdigit() and len(resume_id) <= 4:
            resume_id = int(resume_id)  # a number from %chat --sessions
        agent = _run.shown(lambda: nbagent.current(
            new=args.flag("new") or args.flag("no_tools"), model=args.value("model"),
            resume=resume_id, builtin_tools=False if args.flag("no_tools") else None))
        if agent is None:
            return
        if resume_id:
            _run.text(f"nbagent: resumed session {agent.session_id} "
                      f"({len(agent.history)} messages)")
        _run.notice(agent)
        command = text.splitlines()[0] if text else ""
        if command.startswith("/compact"):
            _run.compact(agent, command.removeprefix("/compact").strip() or None)
            return
        if command.startswith("/context"):
            _run.context(agent)
            return
        if not text:  # options alone do what they say (`%chat --new`, as hints spell it)
            if args.flag("new") or args.flag("no_tools"):
                _run.text(f"nbagent: a new session, {agent.session_id}")
            elif args.value("model") and not resume_id:
                _run.text(f"nbagent: the chat now uses {agent.model.name}")
            elif not resume_id:
                raise UsageError(NOTHING_TO_SEND)
            return
        exchange = _cell_id(self.shell)
        # the cells run since the last chat go first; kept for the next one if this fails
        with _cells_seen.noted(agent, text, exchange) as text:
            _run.chat(self.shell, agent, text, as_cell=args.flag("cell"), exchange=exchange)

    @no_var_expand
    @line_magic
    def compact(self, line: str) -> None:
        """Compact the conversation now: %compact [focus instructions for the summary].

        %compact --preview [focus]  what a compaction would do now, without doing it
        %compact --show             past compactions (an undone one says so)
        %compact --undo             put back the history as it was before the last one
                                    (only if nothing was added since)
        """
        args = parse_line(line, magic="compact")
        if args.flag("help"):
            return _run.show_help(self.compact)
        agent = _run.shown(nbagent.current)
        if agent is None:
            return
        focus = args.text or None
        if args.flag("show"):
            _run.compactions(agent)
        elif args.flag("undo"):
            if _run.shown(agent.undo_compaction, done=True) is not None:
                _run.text(f"nbagent: the last compaction was undone; "
                      f"{tokens(agent.context_state().tokens)} now")
                _run.meter_line(agent)
        elif args.flag("preview"):
            previewed = _run.shown(lambda: agent.preview_compaction(focus))
            if previewed is not None:
                _run.text(previewed.text())
        else:
            _run.compact(agent, focus)

    @no_var_expand
    @line_magic
    def context(self, line: str) -> None:
        """Show what fills the context window: %context (or %context --compactions).

        The percentages are of the meter's base: the auto-compact trigger, or the effective
        window (the window less the output reserve) when automatic compaction is off; so
        "free" is the meter's "left". The trigger, the effective window and the window follow.
        """
        args = parse_line(line, magic="context")
        if args.flag("help"):
            return _run.show_help(self.context)
        if args.text:
            raise UsageError(f"%context takes no text (got {args.text!r})")
        agent = _run.shown(nbagent.current)
        if agent is not None:
            (_run.compactions if args.flag("compactions") else _run.context)(agent)

    @no_var_expand
    @line_magic
    def pin(self, line: str) -> None:
        """Keep a fact verbatim through every compaction: %pin the target column is churn_30d

        %pin --list shows the pins; %pin --remove N removes one. The text is kept as typed.
        """
        args = parse_line(line, magic="pin")
        if args.flag("help"):
            return _run.show_help(self.pin)
        agent = _run.shown(nbagent.current)
        if agent is None:
            return
        remove = args.options.get("remove")
        try:
            if isinstance(remove, int) and not isinstance(remove, bool):
                pins = agent.unpin(remove - 1)
            elif args.text and not args.flag("list"):
                pins = agent.pin(args.text)
            else:
                pins = agent.pins()
        except ValueError as error:
            raise UsageError(str(error)) from None
        _run.text("\n".join(f"{n}. {p}" for n, p in enumerate(pins, 1)) or "nbagent: no pins")

    @line_magic
    def nbagent(self, line: str) -> None:
        _subcommands.run(self.shell, line)

    # its help, printed from the table of subcommands, so no subcommand is left out of it
    nbagent.__doc__ = _subcommands.help_text()


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
        # every line magic the class defines, read from its own table so a new one is never
        # left out; a line form of a cell magic (%chat) stays with the extension owning %%chat
        for name, method in magics.magics["line"].items():
            if name not in magics.magics["cell"]:
                shell.register_magic_function(method, "line", name)
    else:
        shell.register_magics(magics)
        cleanup = shell.input_transformers_cleanup
        if _escape_help not in cleanup:
            cleanup.append(_escape_help)
    shell.register_magic_function(magics.chat, "cell", "nbagent")
    # Every call nbagent prints for the user to paste names the package
    # (`nbagent.current().use_model(…)`): after %load_ext it runs as pasted, as after
    # `import nbagent`. Hidden from %who; a variable of the user's by that name is kept.
    if "nbagent" not in shell.user_ns:
        shell.push({"nbagent": nbagent}, interactive=False)
    if _record_error not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _record_error)
    _cells_seen.register(shell)
    from nbagent.code import use_code_runner

    use_code_runner(_code_runs.NotebookRunner(shell))  # the model's code shows in its cell
    _warm_after_this_cell(shell)


def _warm_after_this_cell(shell: Any) -> None:
    """Warm the embedded model's server once the cell that loaded the extension has run:
    a model chosen in that same cell (`%nbagent model=…` below `%load_ext`, the README's
    pattern) is the one in use by then, and nothing is started for the embedded one. A
    load from outside a cell (a configured extension, a script) warms nothing: the next
    cell to start cancels it, and the first chat starts the server."""

    def done(*_: Any) -> None:
        for event, callback in (("post_run_cell", warm), ("pre_run_cell", cancel)):
            if callback in shell.events.callbacks[event]:
                shell.events.unregister(event, callback)

    def warm(*_: Any) -> None:  # the loading cell ended
        done()
        warm_start()

    def cancel(*_: Any) -> None:  # another cell starts first: the load was outside one
        done()

    shell.events.register("post_run_cell", warm)
    shell.events.register("pre_run_cell", cancel)


def warm_start() -> None:
    """When the embedded model answers, start its server now, in the background, so the
    first chat does not wait for it (joined at once when another kernel of this user runs
    it). Never fails: a model that cannot start says so at the first chat; a model chosen
    later lets the server go (`Agent.use_model`)."""
    try:
        nbagent.current().warm_up()  # the embedded model's server; other models: nothing
    except NbagentError:
        pass
