"""The kernel's current chat session: one `Agent` per kernel, created on first use,
reachable from Python as `nbagent.current()` for anything the magics don't cover.
"""

from __future__ import annotations

from typing import Any

from ._agent import Agent

_current: Agent | None = None


def _user_namespace() -> dict[str, Any] | None:
    try:
        from IPython.core.getipython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()  # type: ignore[no-untyped-call]
    return shell.user_ns if shell is not None else None


def current() -> Agent:
    """The current session's agent, created (with the default model) on first use."""
    global _current
    if _current is None:
        _current = Agent(namespace=_user_namespace())
    return _current


def new_session(model: Any = None, **options: Any) -> Agent:
    """Start a new session (a fresh history) and make it the current one."""
    global _current
    options.setdefault("namespace", _user_namespace())
    _current = Agent(model=model, **options)
    return _current


def set_current(agent: Agent) -> Agent:
    """Make `agent` the session the magics talk to."""
    global _current
    _current = agent
    return agent
