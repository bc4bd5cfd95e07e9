"""The built-in tools for data science in a notebook, each a plain function whose first
parameter is the `ToolContext`, and `BUILTIN_TOOLS`, the one table that offers them
(print it to see them all). A new built-in tool is one function here plus one row.
The opt-in `python` tool is offered only when the user turns it on.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import traceback
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...engine._events import EventStream
from .._approval import Approval
from .._settings import Settings
from ..archive._archive import Archive, data_dir
from ..archive._archive import recall as recall_archived
from ._cells import propose
from ._context import ToolContext, no_archive, own_approval, unguarded
from ._data_items import briefing as briefing_of
from ._data_items import folder_listing
from ._files import read_text_page
from ._namespace import variable_lines
from ._paging import PAGE, PageBounds, bounded
from ._run_code import run_code
from ._tool import OutputStore, Tool, argument_help, tool
from ._values import describe_value, listing_description

MAX_LISTING_TOKENS = 2_000


def list_variables(context: ToolContext) -> str:
    # Its docstring (the model's description of it, and docs/tools.md's) is assigned
    # below from `VALUE_KINDS`, the kinds the listing tells apart, so the two agree.
    lines = variable_lines(context.namespace, max_tokens=MAX_LISTING_TOKENS)
    return "\n".join(lines) or "(no variables)"


list_variables.__doc__ = listing_description()


def describe_variable(context: ToolContext, name: str, rows: int = 5) -> str:
    """Describe one variable: type, shape, dtypes, the first rows and summary statistics.

    Args:
        name: the variable's name in the notebook.
        rows: how many rows of its head to show (at most 50).
    """
    if name not in context.namespace:
        return f"No variable named {name!r}. Use list_variables to see what exists."
    return describe_value(name, context.namespace[name], rows=max(1, min(rows, 50)),
                          max_chars=context.settings().describe_max_chars)


def read_file(context: ToolContext, path: str, offset: int = 0, limit: int = 200,
              start: int = 0) -> str:
    """Read a text file by lines, a page at a time (files under the working directory
    and NBAGENT_READ_ROOTS only).

    Args:
        path: the file's path.
        offset: the first line to read (0-based).
        limit: how many lines to read (at most 500).
        start: a byte in line `offset` to start at (from a page header).
    """
    return read_text_page(path, offset, limit, start=start, bounds=context.page,
                          data_folders=_session_data(context))


def list_files(context: ToolContext, path: str = ".") -> str:
    """List a folder's files that read_file may read, with their sizes, and its folders
    (hidden and protected ones are left out).

    Args:
        path: the folder's path; "." is the working directory.
    """
    return folder_listing(path, data_folders=_session_data(context))


def _session_data(context: ToolContext) -> list[Path]:
    """The session's own data, which the file tools refuse as the environment's data
    folder: the folder its `data_dir` setting names, and where its archive really is (the
    setting changed since the session began, or a session resumed from a file elsewhere:
    the `sessions/` folder it sits in, else that file alone — never the folder above, which
    may be the working directory)."""
    found = [data_dir(context.settings().data_dir)]
    archive = context.archive()
    if archive is not None:
        kept = archive.path
        found.append(kept.parent if kept.parent.name == "sessions" else kept)
    return found


def read_output(context: ToolContext, ref: str, offset: int = 0, limit: int = 4_000) -> str:
    """Read back a tool output that was cut on arrival, a page at a time.

    Args:
        ref: the reference named in the cut marker (the tool call id).
        offset: the first character to read.
        limit: how many characters to read.
    """
    return context.store.page(ref, offset, limit)


def recall(context: ToolContext, query: str = "", message: int = -1, offset: int = 0,
           limit: int = 5) -> str:
    """Search the full session transcript (kept even after compaction) for a detail a
    summary dropped, or fetch one archived message by its number.

    Args:
        query: words to look for (case-insensitive); empty lists the latest messages.
        message: an archived message number to fetch whole (from a search result).
        offset: skip this many matches (to page).
        limit: how many matches to show (at most 10).
    """
    found = recall_archived(context.archive(), query, message, offset, limit)
    return bounded(found, context.page, how_to_continue="Ask for fewer matches (limit) or "
                   "page on with offset.")


def propose_cell(context: ToolContext, code: str, explanation: str = "") -> str:
    """Put code in a new notebook cell below the chat, for the user to review and run
    (it is never run for them).

    Args:
        code: the cell's code.
        explanation: a short comment placed above it.
    """
    return propose(context.events, code, explanation)


def delegate(context: ToolContext, task: str, data: tuple[str, ...] = ()) -> str:
    """Delegate a task over a big read (a long file, a folder of files, a wide table) to a
    helper with its own context window and your tools; only its short report returns.

    Args:
        task: what to find out and report.
        data: the files, folders, variables or resources it concerns.
    """
    if context.delegate is None:
        return "Not delegated: a delegated task cannot delegate again; do the work here."
    briefing = briefing_of(data, context.namespace, data_folders=_session_data(context))
    return context.delegate(task, briefing)


def compact_context(context: ToolContext, focus: str = "") -> str:
    """Compact this conversation when this turn ends, a phase of the work being over (at
    most once in a few turns).

    Args:
        focus: what the summary must keep.
    """
    if context.ask_compaction is None:
        return "Not compacted: there is no conversation to compact here."
    return context.ask_compaction(focus)


def python(context: ToolContext, code: str) -> str:
    """Run Python code in the user's notebook namespace; returns what it printed.

    Args:
        code: the code to run; assign results to variables to keep them.
    """
    out = io.StringIO()
    with context.guard("the python tool's code") as undone:  # it cannot widen approval
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                exec(compile(code, "<nbagent>", "exec"), context.namespace)
        except Exception:
            out.write(traceback.format_exc(limit=3))
    said = "".join(f"\n[{line}]" for line in undone)
    return (out.getvalue() or "(ran; printed nothing)") + said


@dataclass(frozen=True)
class BuiltinTool:
    """One row of the table: the function, whether it returns pages itself (never capped),
    the setting that must be on to offer it (None: always offered), the `ToolContext`
    field it needs (a context without it does not offer the tool: the session's doors,
    which a branch and a bare context lack), how a user turns it on or off, or when
    it is offered, for the docs (`describe_builtin_tools`), and whether it is offered at
    any window (`essential`: the notebook's own tools; the others may be left out when
    the schemas do not fit a small window, `agent/_tool_sizes`)."""

    function: Callable[..., str]
    paging: bool = False
    opt_in: str | None = None
    offered: str | None = None
    needs: str | None = None
    essential: bool = False


BUILTIN_TOOLS: dict[str, BuiltinTool] = {
    "list_variables": BuiltinTool(list_variables, essential=True),
    "describe_variable": BuiltinTool(describe_variable, essential=True),
    "read_file": BuiltinTool(read_file, paging=True),
    "list_files": BuiltinTool(list_files),
    "read_output": BuiltinTool(read_output, paging=True),
    "recall": BuiltinTool(recall, paging=True),
    "propose_cell": BuiltinTool(propose_cell, essential=True),
    "run_code": BuiltinTool(run_code, opt_in="runs_code",
                            offered="unless `NBAGENT_RUN_CODE=off`"),
    "delegate": BuiltinTool(delegate, needs="delegate",
                            offered="in a session, not inside a delegated task"),
    "compact_context": BuiltinTool(compact_context, needs="ask_compaction",
                                   offered="in a session, not inside a delegated task"),
    "python": BuiltinTool(python, opt_in="enable_python",
                          offered="only with `NBAGENT_ENABLE_PYTHON=1`"),
}


def bind(function: Callable[..., str], context: ToolContext) -> Callable[..., str]:
    """`function` with its context given: the signature the model sees lacks it."""
    signature = inspect.signature(function)
    shown = signature.replace(parameters=[
        parameter.replace(annotation=_evaluated(parameter.annotation, function))
        for parameter in list(signature.parameters.values())[1:]])

    @functools.wraps(function)
    def bound(**arguments: Any) -> str:
        return function(context, **arguments)

    bound.__signature__ = shown  # type: ignore[attr-defined]
    return bound


def _evaluated(annotation: Any, function: Callable[..., Any]) -> Any:
    """A string annotation (`from __future__ import annotations`) as the type it names in
    the function's module; left as written when it names nothing there."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, getattr(function, "__globals__", {}))  # noqa: S307
    except Exception:
        return annotation


def builtin_names(names: Iterable[str]) -> frozenset[str]:
    """`names` checked against the table (`ValueError` names the built-ins that exist)."""
    chosen = frozenset(names)
    unknown = sorted(chosen - set(BUILTIN_TOOLS))
    if unknown:
        raise ValueError(f"no built-in tool named {', '.join(unknown)}; the built-ins are "
                         f"{', '.join(BUILTIN_TOOLS)}")
    return chosen


def builtin_tools(context: ToolContext, *, enabled: dict[str, bool] | None = None) -> list[Tool]:
    """The table's tools over `context`; an opt-in row is offered when its setting is on
    (`enabled` wins over the settings)."""
    switches = enabled or {}
    offered: list[Tool] = []
    for name, row in BUILTIN_TOOLS.items():
        if row.needs is not None and getattr(context, row.needs) is None:
            continue
        if row.opt_in is not None:
            on = switches.get(row.opt_in)
            if not (on if on is not None else getattr(context.settings(), row.opt_in, False)):
                continue
        offered.append(tool(name=name, paging=row.paging)(bind(row.function, context)))
    return offered


def notebook_tools(
    namespace: dict[str, Any],
    store: OutputStore,
    *,
    enable_python: bool = False,
    archive: Callable[[], Archive | None] = no_archive,
    events: EventStream | None = None,
    settings: Callable[[], Settings] | None = None,
    page: PageBounds = PAGE,
    approval: Callable[[], Approval] = own_approval,
    guard: Callable[[str], AbstractContextManager[list[str]]] = unguarded,
    delegate: Callable[[str, str], str] | None = None,
    ask_compaction: Callable[[str], str] | None = None,
) -> list[Tool]:
    """The built-in tools over `namespace` (the notebook's variables); `archive` gives
    the session archive that `recall` searches; `events` is the session's event stream
    (`propose_cell` announces its cell there); `approval` and `guard` are the agent's,
    `delegate` and `ask_compaction` the session's doors (`ToolContext` says what each
    does): without them `delegate` and `compact_context` are not offered."""
    context = ToolContext(namespace, store, archive, settings or Settings.from_env, events, page,
                          approval, guard, delegate, ask_compaction)
    return builtin_tools(context, enabled={"enable_python": enable_python})


def describe_builtin_tools() -> str:
    """The table as Markdown (docs/tools.md shows it): each tool as the model calls it,
    what its docstring tells the model, and when it is offered."""
    rows = ["| tool | what it does (as the model reads it) | offered |", "|---|---|---|"]
    for name, row in BUILTIN_TOOLS.items():
        parameters = list(inspect.signature(row.function).parameters.values())[1:]
        call = ", ".join(p.name if p.default is inspect.Parameter.empty
                         else f"{p.name}={p.default!r}" for p in parameters)
        description, help_for = argument_help(row.function)
        summary = " ".join(description.split("\n\n")[0].split())
        arguments = "; ".join(f"`{p.name}`: {help_for[p.name].rstrip('.')}"
                              for p in parameters if p.name in help_for)
        summary += f" Arguments: {arguments}." if arguments else ""
        offered = row.offered or ("always" if row.opt_in is None else f"with `{row.opt_in}`")
        pages = "; pages its own output" if row.paging else ""
        rows.append(f"| `{name}({call})` | {summary} | {offered}{pages} |")
    return "\n".join(rows)
