"""The kernel's current chat session: one `Agent` per kernel, created on first use and
reachable as `nbagent.current()`; the magics and user code share it. The notebook's
variables come from a running IPython shell, if one is already loaded (never imported).
"""

from __future__ import annotations

import sys
from typing import Any

from ._agent import Agent

_current: Agent | None = None


def user_namespace() -> dict[str, Any] | None:
    """The running IPython shell's user namespace, if there is one."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    namespace = getattr(shell, "user_ns", None)
    return namespace if isinstance(namespace, dict) else None


def current(
    *,
    new: bool = False,
    model: str | None = None,
    resume: str | None = None,
    builtin_tools: bool | None = None,
) -> Agent:
    """The kernel's agent, created (with the default model) on first use.

    Args:
        new: start a new agent and session (keeping the current model unless `model`).
        model: chat with this model from now on (`"local"`: the embedded one).
        resume: a session id, an archive path or "latest": resume it from the archive.
        builtin_tools: for a new session, offer the built-in notebook tools or not.
    """
    global _current
    if resume is not None:
        from .archive._archive import latest_session

        if _current is not None:
            _current.session.close()  # release its archive: it may be the one to resume
        session = latest_session() if resume == "latest" else resume
        chosen = {"model": model} if model else {}
        _current = Agent.resume(session, namespace=user_namespace(), **chosen)
        return _current
    if new or _current is None:
        previous = _current.model if _current is not None and model is None else model
        options = {} if builtin_tools is None else {"builtin_tools": builtin_tools}
        return new_session(previous, **options)
    if model:
        _current.use_model(model)
    return _current


def new_session(model: Any = None, **options: Any) -> Agent:
    """Start a new agent and session (a fresh history) and make it the current one."""
    global _current
    if _current is not None:
        _current.session.close()
    options.setdefault("namespace", user_namespace())
    _current = Agent(model=model, **options)
    return _current


def set_current(agent: Agent) -> Agent:
    """Make `agent` the session the magics talk to."""
    global _current
    _current = agent
    return agent


def reset() -> Agent:
    """Start over: a new agent with the default configuration (`%nbagent reset`)."""
    return new_session(None)
