"""Which front end runs the cell, as far as output goes: one that redraws an output in place
by display id (JupyterLab, Notebook 7, a notebook executed by nbclient) or one that prints
each output as text and cannot take it back (terminal IPython, jupyter console). The chat
display and the meter line ask here, and in the second kind print each thing once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from IPython import get_ipython


def updates_in_place(shell: Any = None) -> bool:
    """Whether outputs of the running cell can be redrawn in place by display id.

    Terminal IPython prints every display and every update anew. In a kernel the client
    decides: a notebook front end names the cell it runs (`cellId` in the request's
    metadata: JupyterLab, its code console, Notebook 7) and a headless executor (nbclient,
    papermill) asks with `allow_stdin` off; both keep outputs by display id. A request
    with neither comes from a console (jupyter console prints each new output's text and
    drops updates). A shell with no kernel and no terminal (an embedded or test shell)
    keeps its outputs as objects and is taken to update in place.
    """
    shell = get_ipython() if shell is None else shell
    if shell is None:
        return False
    if any(kind.__name__ == "TerminalInteractiveShell" for kind in type(shell).__mro__):
        return False
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return True
    try:
        parent = kernel.get_parent()
    except Exception:  # an older kernel without get_parent(): assume a notebook
        return True
    if not isinstance(parent, dict) or not parent:
        return True
    metadata = parent.get("metadata")
    if isinstance(metadata, dict) and metadata.get("cellId"):
        return True
    content = parent.get("content")
    return isinstance(content, dict) and content.get("allow_stdin") is False


_PENDING: dict[int, Callable[[], None]] = {}


def at_cell_end(key: object, callback: Callable[[], None]) -> None:
    """Run `callback` once when the running cell has finished (IPython's post_run_cell):
    asked several times during one cell with the same `key`, it still runs once, last."""
    shell = get_ipython()
    if shell is None:
        callback()
        return
    _PENDING[id(key)] = callback
    if _run_pending not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _run_pending)


def _run_pending(result: object = None) -> None:
    calls = list(_PENDING.values())
    _PENDING.clear()
    for call in calls:
        call()
