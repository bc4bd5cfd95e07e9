"""Code the model runs (the `run_code` tool): the `CodeRunner` contract a front end
implements to run it where the user sees it, `use_code_runner` to install one, the plain
default, the pieces a runner is made of (`execute`, `BoundedText`, `text_form`,
`describe_figure`, `code_request`: the approval request a run is asked as),
`agent_cells` (the code every run of a session ran, as one cell's source to keep) and
`cells_note` (what the model is told of the cells the user ran since its last turn).
Re-exported from the agent's tools folder."""

from __future__ import annotations

from .agent.tools._cells_seen import RanCell, cells_note, hide_secrets
from .agent.tools._code_exec import (
    BoundedText,
    Displayed,
    Executed,
    Shown,
    describe_figure,
    execute,
)
from .agent.tools._code_ran import CodeRan
from .agent.tools._code_runner import (
    CodeResult,
    CodeRunner,
    PlainRunner,
    code_request,
    code_runner,
    text_form,
    use_code_runner,
)
from .agent.tools._code_scope import RunScope, contained, detach, scope_here
from .agent.tools._run_code import agent_cells

__all__ = [
    "BoundedText",
    "Displayed",
    "CodeRan",
    "CodeResult",
    "CodeRunner",
    "Executed",
    "PlainRunner",
    "RanCell",
    "RunScope",
    "Shown",
    "agent_cells",
    "cells_note",
    "code_request",
    "code_runner",
    "contained",
    "describe_figure",
    "detach",
    "execute",
    "hide_secrets",
    "scope_here",
    "text_form",
    "use_code_runner",
]
