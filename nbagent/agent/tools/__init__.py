"""Tools, the agent room's door to them: tools from plain functions (`Tool`, `tool`,
`run_tool`, the `OutputStore` of full results), the built-in tools as one table
(`BUILTIN_TOOLS`, `BuiltinTool`, the `ToolContext` they take, `notebook_tools`, the docs'
table `describe_builtin_tools`), pages bounded in characters, bytes and lines (`PageBounds`,
`bounded`), the `read_file` tool's page of a file (`read_text_page`, opened by
`open_confined`) and the files it never reads (`check_readable`, `secret_file_reason`), what
the notebook shows the model (the `notebook_state` block under `STATE_TITLE`, its
`variable_lines`, one value's `describe_value` and `entry_of`, the kinds of value as a table
`VALUE_KINDS` of `ValueKind` rows in `RANK` order, `{name}`/`In[n]`/`Out[n]` references
expanded), what a delegated task is first told of its data (`briefing`, within `MAX_ITEMS`
and `MAX_FOLDER_FILES`) and the `run_code` tool's runs and answers (`code_runs`,
`runs_as_cells`, the texts the model reads when code did not run) and the figures its code
made, sent to a model that reads images (`attach_png`, `take_figures`, `images_message`,
`without_images`). `nbagent.code` is the user's door to running code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._doors import lazy_door

if TYPE_CHECKING:
    from ._builtin import (
        BUILTIN_TOOLS,
        BuiltinTool,
        builtin_names,
        describe_builtin_tools,
        notebook_tools,
    )
    from ._confinement import check_readable, secret_file_reason
    from ._context import ToolContext
    from ._data_items import MAX_FOLDER_FILES, MAX_ITEMS, briefing
    from ._files import open_confined, read_text_page
    from ._images import (
        MAX_IMAGE_CHARS,
        MAX_IMAGES,
        Figure,
        attach_png,
        images_message,
        take_figures,
        without_images,
    )
    from ._namespace import STATE_TITLE, notebook_state, variable_lines
    from ._paging import PageBounds, bounded
    from ._references import REFERENCE_CHARS, expand_cell_references
    from ._run_code import AS_CELL, DECLINED, NO_ONE, OFF, CodeRuns, code_runs, runs_as_cells
    from ._tool import HandOver, OutputStore, Tool, as_tool, run_tool, tool
    from ._values import RANK, VALUE_KINDS, ValueKind, describe_value, entry_of

# The names load on first use, not here: the archive's record kinds import `_code_ran` from
# this folder while `_builtin` imports the archive, so importing them here would turn that
# into a circle between the two packages, whichever is entered first.
_PARTS = ("._tool", "._builtin", "._context", "._images", "._namespace", "._paging",
          "._references", "._run_code", "._values", "._confinement", "._files", "._data_items")

__all__ = [
    "AS_CELL",
    "BUILTIN_TOOLS",
    "DECLINED",
    "MAX_FOLDER_FILES",
    "MAX_IMAGES",
    "MAX_IMAGE_CHARS",
    "MAX_ITEMS",
    "NO_ONE",
    "OFF",
    "RANK",
    "REFERENCE_CHARS",
    "STATE_TITLE",
    "VALUE_KINDS",
    "BuiltinTool",
    "Figure",
    "HandOver",
    "OutputStore",
    "PageBounds",
    "Tool",
    "ToolContext",
    "ValueKind",
    "as_tool",
    "attach_png",
    "bounded",
    "briefing",
    "builtin_names",
    "check_readable",
    "CodeRuns",
    "code_runs",
    "describe_builtin_tools",
    "describe_value",
    "entry_of",
    "expand_cell_references",
    "images_message",
    "notebook_state",
    "notebook_tools",
    "open_confined",
    "read_text_page",
    "run_tool",
    "runs_as_cells",
    "secret_file_reason",
    "take_figures",
    "tool",
    "variable_lines",
    "without_images",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = lazy_door(globals(), _PARTS)  # see above
