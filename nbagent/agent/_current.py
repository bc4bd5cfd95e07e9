"""The kernel's current chat session: one `Agent` per kernel, created on first use and
reachable as `nbagent.current()`; the magics and user code share it. The notebook's
variables come from a running IPython shell, if one is already loaded (never imported).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, overload

from ..engine._exceptions import NbagentError, NbagentWarning
from ..engine._markers import is_plain_user
from ._agent import Agent
from ._notebook_link import link, linked_session, notebook_path
from .archive._archive import data_dir
from .models._llm import ChatModel

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
    model: str | ChatModel | None = None,
    resume: str | None = None,
    builtin_tools: bool | None = None,
) -> Agent:
    """The kernel's agent, created (with the default model) on first use. In a notebook
    the first use continues the conversation this notebook last had (its archive), with
    a notice saying so; a new or resumed session becomes the notebook's conversation.

    Args:
        new: start a new agent and session (keeping the current model unless `model`).
        model: chat with this model from now on (`"local"`: the embedded one).
        resume: a session id, an archive path or "latest": resume it from the archive.
        builtin_tools: for a new session, offer the built-in notebook tools or not.
    """
    global _current
    namespace = user_namespace()
    notebook = notebook_path(namespace)
    if resume is not None:
        from .archive._archive import latest_session

        if _current is not None:
            _current.session.close()  # release its archive: it may be the one to resume
        session = latest_session() if resume == "latest" else resume
        chosen = {"model": model} if model else {}
        _current = Agent.resume(session, namespace=namespace, **chosen)
        _follow(notebook, _current)
        return _current
    if new or _current is None:
        if not new and notebook is not None:
            continued = _continue(notebook, model, namespace)
            if continued is not None:
                _current = continued
                return continued
        previous = _current.model if _current is not None and model is None else model
        options = {} if builtin_tools is None else {"builtin_tools": builtin_tools}
        return new_session(previous, **options)
    if model:
        _current.use_model(model)
    return _current


def _continue(notebook: str, model: str | ChatModel | None,
              namespace: dict[str, Any] | None) -> Agent | None:
    """The agent of the conversation `notebook` last had, resumed, or None (none yet,
    its archive is gone, or another kernel holds it)."""
    global _current
    # the agent made here has the environment's settings: its data folder is data_dir()'s
    session_id = linked_session(notebook, data_dir())
    if session_id is None or not _archive_exists(session_id):
        return None
    try:
        agent = Agent.resume(session_id, namespace=namespace,
                             **({"model": model} if model else {}))
    except NbagentError:
        return None
    turns = sum(1 for m in agent.history.messages if is_plain_user(m))
    agent.add_notice(f"continuing this notebook's conversation ({turns} user messages, session "
                     f"{agent.session_id}); start fresh with nbagent.new_session()")
    return agent


def _archive_exists(session_id: str) -> bool:
    from .archive._archive import session_path

    try:
        return session_path(session_id).is_file()
    except NbagentError:
        return False


def _follow(notebook: str | None, agent: Agent) -> Agent:
    """Make `agent`'s session the conversation of `notebook` (if in one); the pointer goes
    to the agent's data folder (its `data_dir` setting), beside the archive it names."""
    if notebook is not None:
        try:
            link(notebook, agent.session_id, data_dir(agent.settings().data_dir))
        except OSError as error:  # a read-only data folder: chat on, unlinked
            warnings.warn(f"nbagent could not remember this notebook's session ({error}); "
                          "reopening it will start a new conversation", NbagentWarning,
                          stacklevel=3)
    return agent


def new_session(model: Any = None, **options: Any) -> Agent:
    """Start a new agent and session (a fresh history) and make it the current one; in a
    notebook it becomes the conversation the notebook continues when reopened."""
    global _current
    if _current is not None:
        _current.close()  # its archive, and its MCP servers' processes
    namespace = options.setdefault("namespace", user_namespace())
    _current = Agent(model=model, **options)
    return _follow(notebook_path(namespace), _current)


@overload
def set_current(agent: Agent) -> Agent: ...


@overload
def set_current(agent: None) -> None: ...


def set_current(agent: Agent | None) -> Agent | None:
    """Make `agent` the session the magics talk to; None forgets the current one without
    closing it (the next `current()` makes or continues one, as in a new kernel)."""
    global _current
    _current = agent
    return agent


def reset() -> Agent:
    """Start over: a new agent with the default configuration."""
    return new_session(None)
