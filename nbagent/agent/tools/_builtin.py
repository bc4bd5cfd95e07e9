"""The built-in tools for data science in a notebook: list the user's variables,
describe one, read a file by page, read back a capped tool output, and — only
when the user turns it on — run Python in the user's namespace.
"""

from __future__ import annotations

import contextlib
import io
import traceback
from collections.abc import Callable
from typing import Any

from ..archive._archive import Archive
from ..archive._archive import recall as recall_archived
from ._files import read_text_page
from ._namespace import describe_value, variable_lines
from ._tool import OutputStore, Tool, tool

MAX_DESCRIBE_CHARS = 4_000
MAX_LISTING_TOKENS = 2_000


def notebook_tools(
    namespace: dict[str, Any],
    store: OutputStore,
    *,
    enable_python: bool = False,
    archive: Callable[[], Archive | None] = lambda: None,
) -> list[Tool]:
    """The built-in tools over `namespace` (the notebook's variables); `archive` gives
    the session archive that `recall` searches."""

    @tool
    def list_variables() -> str:
        """List the user's variables: DataFrames with shape, columns and dtypes; arrays
        with shape and dtype; models with class; other values with type."""
        lines = variable_lines(namespace, max_tokens=MAX_LISTING_TOKENS)
        return "\n".join(lines) or "(no variables)"

    @tool
    def describe_variable(name: str, rows: int = 5) -> str:
        """Describe one variable: type, shape, dtypes, the first rows and summary statistics.

        Args:
            name: the variable's name in the notebook.
            rows: how many rows of its head to show (at most 50).
        """
        if name not in namespace:
            return f"No variable named {name!r}. Use list_variables to see what exists."
        return describe_value(name, namespace[name], rows=max(1, min(rows, 50)),
                              max_chars=MAX_DESCRIBE_CHARS)

    @tool(paging=True)
    def read_file(path: str, offset: int = 0, limit: int = 200) -> str:
        """Read a text file by lines, a page at a time (files under the working directory
        and NBAGENT_READ_ROOTS only).

        Args:
            path: the file's path.
            offset: the first line to read (0-based).
            limit: how many lines to read (at most 500).
        """
        return read_text_page(path, offset, limit)

    @tool(paging=True)
    def read_output(ref: str, offset: int = 0, limit: int = 4_000) -> str:
        """Read back a tool output that was cut on arrival, a page at a time.

        Args:
            ref: the reference named in the cut marker (the tool call id).
            offset: the first character to read.
            limit: how many characters to read.
        """
        return store.page(ref, offset, limit)

    @tool(paging=True)
    def recall(query: str = "", message: int = -1, offset: int = 0, limit: int = 5) -> str:
        """Search the full session transcript (kept even after compaction) for a detail a
        summary dropped, or fetch one archived message by its number.

        Args:
            query: words to look for (case-insensitive); empty lists the latest messages.
            message: an archived message number to fetch whole (from a search result).
            offset: skip this many matches (to page).
            limit: how many matches to show (at most 10).
        """
        return recall_archived(archive(), query, message, offset, limit)

    tools = [list_variables, describe_variable, read_file, read_output, recall]
    if enable_python:

        @tool
        def python(code: str) -> str:
            """Run Python code in the user's notebook namespace; returns what it printed.

            Args:
                code: the code to run; assign results to variables to keep them.
            """
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    exec(compile(code, "<nbagent>", "exec"), namespace)
            except Exception:
                out.write(traceback.format_exc(limit=3))
            return out.getvalue() or "(ran; printed nothing)"

        tools.append(python)
    return tools
