"""The built-in tools for data science in a notebook: list the user's variables,
describe one, read a file by page, read back a capped tool output, and — only
when the user turns it on — run Python in the user's namespace.
"""

from __future__ import annotations

import contextlib
import io
import json
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._archive import Archive, read_records
from ._tools import OutputStore, Tool, tool

MAX_DESCRIBE_CHARS = 4_000


def _shape(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f" shape {shape}"
    try:
        return f" len {len(value)}"
    except TypeError:
        return ""


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
        """List the user's variables: names, types, and shapes of DataFrames and arrays."""
        rows = [
            f"{name}: {type(value).__name__}{_shape(value)}"
            for name, value in namespace.items()
            if not name.startswith("_") and not callable(value) and type(value).__name__ != "module"
        ]
        return "\n".join(sorted(rows)) or "(no variables)"

    @tool
    def describe_variable(name: str, rows: int = 5) -> str:
        """Describe one variable: type, shape, dtypes, the first rows and summary statistics.

        Args:
            name: the variable's name in the notebook.
            rows: how many rows of its head to show (at most 50).
        """
        if name not in namespace:
            return f"No variable named {name!r}. Use list_variables to see what exists."
        value = namespace[name]
        parts = [f"{name}: {type(value).__name__}{_shape(value)}"]
        if hasattr(value, "dtypes") and hasattr(value, "head"):
            parts += [
                "dtypes:",
                str(value.dtypes),
                f"head({min(rows, 50)}):",
                str(value.head(min(rows, 50))),
            ]
            with contextlib.suppress(Exception):
                parts += ["describe():", str(value.describe())]
        else:
            parts.append(repr(value))
        text = "\n".join(parts)
        return text if len(text) <= MAX_DESCRIBE_CHARS else text[:MAX_DESCRIBE_CHARS] + "\n[...]"

    @tool(paging=True)
    def read_file(path: str, offset: int = 0, limit: int = 200) -> str:
        """Read a text file by lines, a page at a time.

        Args:
            path: the file's path.
            offset: the first line to read (0-based).
            limit: how many lines to read (at most 500).
        """
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        limit = max(1, min(limit, 500))
        page = lines[offset : offset + limit]
        end = offset + len(page)
        more = f"; next offset {end}" if end < len(lines) else "; end of file"
        return f"[lines {offset}–{end} of {len(lines)}{more}]\n" + "\n".join(page)

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
        session = archive()
        if session is None or not session.path.exists():
            return "No session archive to recall from."
        messages = [r["message"] for r in read_records(session.path) if r["kind"] == "message"]
        if message >= 0:
            if message >= len(messages):
                return f"No archived message {message}; there are {len(messages)}."
            return json.dumps(messages[message], ensure_ascii=False)[:8_000]
        needle = query.lower()
        hits = [(i, m) for i, m in enumerate(messages)
                if needle in json.dumps(m, ensure_ascii=False).lower()]
        if not needle:
            hits = hits[::-1]
        page = hits[max(0, offset): max(0, offset) + max(1, min(limit, 10))]
        lines = [f"{len(hits)} archived messages match{'' if needle else ' (newest first)'}; "
                 f"showing {len(page)} from {offset}:"]
        for index, found in page:
            text = str(found.get("content") or json.dumps(found.get("tool_calls")))
            lines.append(f"#{index} {found['role']}: {text[:300]}")
        return "\n".join(lines)

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
