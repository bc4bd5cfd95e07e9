"""`%nbagent`'s subcommands as one table (`SUBCOMMANDS`: name, usage, help, handler) and its
one dispatch (`run`). The magic's help — its docstring, which `%nbagent?` shows and the
docs' magics block prints — and the usage error for a line no row takes are printed from
the rows, so a subcommand cannot be missing from either. A new subcommand is one row and
its handler: one call into nbagent's public API (the longer ones, MCP servers and what
runs without asking, are `_forms`'), returning the lines to show.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.display import display

import nbagent

from . import _code_runs, _forms, _run
from ._forms import Misuse
from ._texts import notebook_words

SETTINGS = "KEY=VALUE"  # the settings form's name: its words are settings, not a row's name
HELP_COLUMN = 31  # where a row's help starts in `%nbagent?`
HELP_WIDTH = 92

# (the shell, the rest of the line after the row's name, as typed) -> the lines to show
Handler = Callable[[Any, str], "str | None"]


@dataclass(frozen=True)
class Subcommand:
    """One form of `%nbagent`: the words that select it (`name`), what follows them
    (`usage`: "" when nothing may), one line on what it does (`help`), and `handler`. Two
    rows may share a name when a form has two shapes (`mcp add`), and then their handler."""

    name: str
    usage: str
    help: str
    handler: Handler

    @property
    def spelled(self) -> str:
        """As the help and the usage error write it, after `%nbagent`."""
        if self.name == SETTINGS:
            return self.usage
        return f"{self.name} {self.usage}".strip()


def _agent() -> Any:
    return _run.shown(nbagent.current)  # None when it could not be made: already said


def describe(shell: Any, rest: str) -> str | None:
    agent = _agent()
    return None if agent is None else notebook_words(agent.describe())


def change_settings(shell: Any, rest: str) -> str | None:
    """`key=value …`: every change checked before any takes effect (`Agent.configure`)."""
    try:
        words = shlex.split(rest)
    except ValueError as error:  # an unclosed quote
        raise Misuse(str(error)) from None
    changes: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            raise UsageError(unknown_form(word))
        changes[key] = value
    agent = _agent()
    if agent is None:
        return None
    try:
        agent.configure(**changes)
    except ValueError as error:  # names the setting, the value and what it accepts
        raise UsageError(str(error)) from None
    return notebook_words(agent.describe())


def reset(shell: Any, rest: str) -> str | None:
    agent = _run.shown(nbagent.reset)
    return None if agent is None else notebook_words(agent.describe())


def meter(shell: Any, rest: str) -> None:
    agent = _agent()
    if agent is not None:
        from ._meter_widget import ContextMeter  # anywidget loads here, not with the magics

        display(ContextMeter.follow(agent))  # the interactive widget, an extra


def models(shell: Any, rest: str) -> str | None:
    if rest not in ("", "--refresh"):
        raise Misuse(f"only --refresh may follow (got {rest!r})")
    shown: str | None = _run.shown(lambda: _forms.models(refresh=rest == "--refresh"))
    return shown


def cells(shell: Any, rest: str) -> str | None:
    agent = _agent()
    return None if agent is None else _code_runs.offer_cells(shell, agent)


def on_agent(form: Callable[[Any, str], str]) -> Handler:
    """A handler that runs `form` on the current agent (nothing when there is none)."""
    def handler(shell: Any, rest: str) -> str | None:
        agent = _agent()
        return None if agent is None else form(agent, rest)
    return handler


mcp_add = on_agent(_forms.mcp_add)  # one handler for both of its shapes


# The order is the help's. A line is matched to the row whose name is its first words
# (the longest such name), `%nbagent` alone to the row named ""; a first word with "=" is
# the settings form, whose names are `nbagent.Settings`' fields rather than rows here.
SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("", "", "what differs from the defaults, and the session", describe),
    Subcommand(SETTINGS, "model=NAME window=8192 enable_python=true …", "change settings "
               "for this session (none changes if one is refused)", change_settings),
    Subcommand(SETTINGS, "model=local", "back to the embedded model", change_settings),
    Subcommand(SETTINGS, "run_code=ask|auto|off", "code the model runs: asks you first "
               "(default), runs at once, or never runs", change_settings),
    Subcommand(SETTINGS, "see_cells=false", "don't tell the model about the cells you ran",
               change_settings),
    Subcommand("reset", "", "start over with the defaults", reset),
    Subcommand("meter", "", "show the interactive context meter here", meter),
    Subcommand("models", "[--refresh]", "local models found on this machine (--refresh: "
               "look again)", models),
    Subcommand("cells", "", "the code the model ran, as a new cell below to keep", cells),
    Subcommand("allow code", "", "all code the model runs, without asking (this session)",
               on_agent(_forms.allow_code)),
    Subcommand("revoke code", "", "code the model runs asks again",
               on_agent(_forms.revoke_code)),
    Subcommand("revoke mcp", "NAME [TOOL]", "that server's (or tool's) calls ask again",
               on_agent(_forms.revoke_mcp)),
    Subcommand("revoke all", "", "everything allowed asks again", on_agent(_forms.revoke_all)),
    Subcommand("mcp add", "NAME -- command args…", "an MCP server started by a command",
               mcp_add),
    Subcommand("mcp add", "NAME URL", "an MCP server over HTTP", mcp_add),
    Subcommand("mcp list", "", "each server, its tools and what they say (also: %nbagent "
               "mcp)", on_agent(_forms.mcp_list)),
    Subcommand("mcp allow", "NAME [TOOL]", "run without asking (this session)",
               on_agent(_forms.mcp_allow)),
    Subcommand("mcp remove", "NAME", "stop the server and drop its tools",
               on_agent(_forms.mcp_remove)),
)
ALSO = {"mcp": "mcp list"}  # a shorter spelling of a row's name: `%nbagent mcp` lists


def run(shell: Any, line: str) -> None:
    """Run `%nbagent line`: the row it selects, with the rest of the line as typed."""
    row, rest = select(line)
    if not row.usage and rest:
        raise UsageError(f"%nbagent {row.name} takes nothing after it (got {rest!r})")
    try:  # an nbagent error is a line in the cell (`shown`); misused words a usage error
        shown = _run.shown(lambda: row.handler(shell, rest))
    except Misuse as error:  # the row's own usage, with every shape it has
        shapes = " · ".join(f"%nbagent {r.spelled}" for r in SUBCOMMANDS if r.name == row.name)
        raise UsageError(f"%nbagent {row.name}: {error}. Expected: {shapes}") from None
    if shown:
        _run.text(shown)


def select(line: str) -> tuple[Subcommand, str]:
    """The row `line` selects and the rest of the line after the row's name, as typed."""
    words = list(re.finditer(r"\S+", line))
    if words and "=" in words[0].group():
        return next(r for r in SUBCOMMANDS if r.name == SETTINGS), line.strip()
    typed = [w.group() for w in words]
    if typed[:1] and typed[0] in ALSO and len(typed) == 1:
        typed = ALSO[typed[0]].split()
        return next(r for r in SUBCOMMANDS if r.name.split() == typed), ""
    named = [r for r in SUBCOMMANDS if r.name != SETTINGS and r.name.split() == typed[
        :len(r.name.split())] and (r.name or not typed)]
    if not named:
        raise UsageError(unknown_form(line.strip()))
    row = max(named, key=lambda r: len(r.name.split()))  # the first of the longest names
    size = len(row.name.split())
    return row, line[words[size - 1].end():].strip() if size else ""


def unknown_form(typed: str) -> str:
    """The usage error for words no row takes: every form, from the table."""
    settings = " · ".join(r.usage for r in SUBCOMMANDS if r.name == SETTINGS)
    forms = ", ".join(repr(r.spelled) for r in SUBCOMMANDS if r.name not in ("", SETTINGS))
    return f"Expected key=value settings ({settings}) or one of {forms}; got {typed!r}."


def help_text() -> str:
    """`%nbagent`'s help: a line per row, then the settings it takes (`nbagent.Settings`)."""
    lines = ["Show or change nbagent's configuration for this session.", ""]
    for row in SUBCOMMANDS:
        form = f"%nbagent {row.spelled}".strip()
        indent = " " * HELP_COLUMN
        if len(form) >= HELP_COLUMN:  # a long form on a line of its own, its help below
            lines.append(form)
        else:
            indent = f"{form:<{HELP_COLUMN}}"
        lines += textwrap.wrap(row.help, HELP_WIDTH, initial_indent=indent,
                               subsequent_indent=" " * HELP_COLUMN)
    settable = ", ".join(nbagent.Settings.model_fields)
    lines += ["", *textwrap.wrap(f"Settable: any NBAGENT_* setting by its lower-case name "
                                 f"({settable}; window is max_context_tokens).", HELP_WIDTH)]
    return "\n".join(lines)
