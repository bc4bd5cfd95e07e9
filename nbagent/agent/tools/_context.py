"""`ToolContext`: everything a built-in tool may use, in one small object — the
notebook's namespace, the output store, the session's archive, the settings, the
session's event stream, the page bounds, the agent's approval and its guard around a
code run, and the session's two doors a tool may knock on (delegating a task to a branch,
asking for a compaction). A built-in tool is a plain
function whose first parameter is the context; `notebook_tools` binds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from ...engine._events import EventStream
from .._approval import Approval
from .._settings import Settings
from ..archive._archive import Archive
from ._paging import PAGE, PageBounds
from ._tool import OutputStore


def no_archive() -> Archive | None:
    return None


def own_approval() -> Approval:
    """Outside an agent: asks with input(), allows nothing beforehand."""
    return Approval()


@contextmanager
def unguarded(label: str) -> Iterator[list[str]]:
    yield []


@dataclass
class ToolContext:
    """What the built-in tools work on. A new field gets a default (a context is made
    from the namespace alone), its line below (tests/agent/tools/test_context.py checks)
    and its value in `notebook_tools`; a folder the file tools should read too goes to
    `read_text_page` as `extra_implicit`, never as `roots` (explicit roots opt protected
    places back in: docs/architecture.md, "A new ToolContext field").

    Args:
        namespace: the notebook's variables (the user's namespace, never a copy).
        store: full tool outputs that were cut on arrival, for `read_output`.
        archive: gives the session's archive (None without one) when a tool runs.
        settings: gives the settings in force when a tool runs.
        events: the session's event stream (None outside a session: nothing is emitted).
        page: how large one page of a paging tool may be.
        approval: gives the agent's `Approval`, which asks the user before the model's
            code runs (the one approval mechanism; MCP calls use it too).
        guard: around a run of the model's code, `guard(label)` puts back whatever the run
            changed of how the user is asked, and yields the line saying so.
        delegate: runs a task in a branch of the session — its own history and window,
            the same tools but this one, the same approval — given the task and a
            briefing of its data, and returns its bounded report (None where no branch
            may start: outside a session, or inside a branch).
        ask_compaction: notes the model's request for a compaction with a focus and
            returns whether it was taken (None outside a session, or inside a branch).
    """

    namespace: dict[str, Any]
    store: OutputStore = field(default_factory=OutputStore)
    archive: Callable[[], Archive | None] = no_archive
    settings: Callable[[], Settings] = Settings.from_env
    events: EventStream | None = None
    page: PageBounds = PAGE
    approval: Callable[[], Approval] = own_approval
    guard: Callable[[str], AbstractContextManager[list[str]]] = unguarded
    delegate: Callable[[str, str], str] | None = None
    ask_compaction: Callable[[str], str] | None = None
