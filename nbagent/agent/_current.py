"""The kernel's current chat session: one `Agent` per kernel, created on first use and
reachable as `nbagent.current()`; the magics and user code share it. The notebook's
variables come from a running IPython shell, if one is already loaded (never imported).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path
from typing import Any, overload

from ..engine._exceptions import ArchiveError, NbagentError, NbagentWarning
from ..engine._markers import is_plain_user
from ._agent import Agent
from ._notebook_link import Pointer, conversation_for, link, notebook_path
from ._texts import CONTINUING, COPY, HELD
from .archive._archive import data_dir, session_path
from .archive._paths import last_sequence
from .archive._private_files import is_held
from .models._llm import ChatModel
from .models._resolve import EmbeddedModel

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
    resume: str | int | None = None,
    builtin_tools: bool | None = None,
) -> Agent:
    """The kernel's agent, created (with the default model) on first use. In a notebook
    the first use continues the conversation this notebook last had (its archive) — also
    after the notebook was renamed, moved or saved under a new name, found from its saved
    outputs — with a notice saying so; a new or resumed session becomes the notebook's
    conversation.

    Args:
        new: start a new agent and session (keeping the current model unless `model`).
        model: chat with this model from now on (`"local"`: the embedded one).
        resume: a session id, an archive path, "latest", or a number: the session at
            that place in `nbagent.Agent.sessions()` (1 is the last written).
        builtin_tools: for a new session, offer the built-in notebook tools or not.
    """
    namespace = user_namespace()
    notebook = notebook_path(namespace)
    if resume is not None:
        from .archive._archive import latest_session

        session = _numbered(resume) if isinstance(resume, int) else resume
        if _current is not None:
            _current.session.close()  # release its archive: it may be the one to resume
        session = latest_session() if session == "latest" else session
        chosen = {"model": model} if model else {}
        return _follow(notebook, _become(Agent.resume(session, namespace=namespace, **chosen)))
    if new or _current is None:
        why = None
        if not new and notebook is not None:
            continued, why = _continue(notebook, model, namespace)
            if continued is not None:
                return _become(continued)
        previous = _current.model if _current is not None and model is None else model
        options = {} if builtin_tools is None else {"builtin_tools": builtin_tools}
        agent = new_session(previous, **options)
        if why is not None:
            agent.add_notice(why)
        return agent
    if model:
        _current.use_model(model)
    return _current


def _continue(notebook: str, model: str | ChatModel | None,
              namespace: dict[str, Any] | None) -> tuple[Agent | None, str | None]:
    """The agent of the conversation `notebook` continues, resumed (with its one
    "continuing" line), or None and why not when the user should know: a copy's
    conversation stays with the notebook it was copied from; one another kernel holds
    stays there."""
    # the agent made here has the environment's settings: its data folder is data_dir()'s
    directory = data_dir()
    found = conversation_for(notebook, directory, lambda s: _sequence(s, directory))
    if found.session is None:
        if found.copy_of is None or found.copied is None:
            return None, None
        return None, COPY.format(original=Path(found.copy_of).name, session=found.copied)
    chosen = {"model": model} if model else {}
    try:
        agent = Agent.resume(found.session, namespace=namespace, **chosen)
    except NbagentError:
        if is_held(session_path(found.session, directory)):
            return None, HELD.format(session=found.session)
        return None, None
    earlier: list[str] = []
    for pointer in found.gone:  # the notebook's old names: their sessions become its own
        read = Pointer.read(pointer)
        earlier += read.earlier if read is not None else []
        with contextlib.suppress(OSError):
            pointer.unlink()
    _follow(notebook, agent, earlier)
    turns = sum(1 for m in agent.history.messages if is_plain_user(m))
    was = f", which it had as {Path(found.was).name}" if found.was and Path(
        found.was).name != Path(notebook).name else ""
    agent.add_notice(CONTINUING.format(turns=turns, session=agent.session_id, was=was))
    return agent, None


def _numbered(place: int) -> str:
    listed = Agent.sessions()
    if not 1 <= place <= len(listed):
        raise ArchiveError(f"there is no session number {place}: "
                           + (f"nbagent.Agent.sessions() lists {len(listed)}" if listed
                              else "no session is kept yet"))
    return listed[place - 1].id


def _sequence(session_id: str, directory: Path) -> int | None:
    """The session's archive sequence (0 for an archive older than sequences), None
    when it has no archive."""
    try:
        path = session_path(session_id, directory)
    except NbagentError:
        return None
    if not path.is_file():
        return None
    return last_sequence(path) or 0


def _follow(notebook: str | None, agent: Agent, earlier: list[str] | None = None) -> Agent:
    """Make `agent`'s session the conversation of `notebook` (if in one); the pointer goes
    to the agent's data folder (its `data_dir` setting), beside the archive it names."""
    if notebook is not None:
        try:
            link(notebook, agent.session_id, data_dir(agent.settings().data_dir), earlier)
        except OSError as error:  # a read-only data folder: chat on, unlinked
            warnings.warn(f"nbagent could not remember this notebook's session ({error}); "
                          "reopening it will start a new conversation", NbagentWarning,
                          stacklevel=3)
    return agent


def new_session(model: Any = None, **options: Any) -> Agent:
    """Start a new agent and session (a fresh history) and make it the current one; in a
    notebook it becomes the conversation the notebook continues when reopened."""
    if _current is not None:
        _current.close()  # its archive, and its MCP servers' processes
    namespace = options.setdefault("namespace", user_namespace())
    return _follow(notebook_path(namespace), _become(Agent(model=model, **options)))


def kernel_agent() -> Agent | None:
    """The kernel's agent if one was made (never makes one)."""
    return _current


@overload
def set_current(agent: Agent) -> Agent: ...


@overload
def set_current(agent: None) -> None: ...


def set_current(agent: Agent | None) -> Agent | None:
    """Make `agent` the session the magics talk to; None forgets the current one without
    closing it (the next `current()` makes or continues one, as in a new kernel). The
    embedded model the current one chatted with is let go of unless `agent` chats with it
    (`_become`)."""
    global _current
    if agent is None:
        if _current is not None and isinstance(_current.model, EmbeddedModel):
            _current.model.release()  # no agent of this kernel chats with it now
        _current = None
        return None
    return _become(agent)


def _become(agent: Agent) -> Agent:
    """`agent` becomes the kernel's agent. Whatever way the model in use changes (an agent
    made, resumed or set in its place), the embedded model the one before chatted with is
    let go of unless `agent` chats with it, or is handed to `agent` when its own is the
    same embedded model not started yet (`Agent._replaces`): the server `%load_ext`
    warm-starts runs only while the embedded model answers (issue 40 item 3)."""
    global _current
    before, _current = _current, agent
    if before is not None and before is not agent:
        agent._replaces(before)
    return agent


def reset() -> Agent:
    """Start over: a new agent with the default configuration."""
    return new_session(None)
