"""Resuming a session from its archive after a kernel restart: the sessions kept to choose
from (with the notebooks they were the conversation of), which archive a session id or
path means, the agent rebuilt with the model and system prompt it had, and the session
taking over the replayed history, outputs, breaker count and archive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..engine._exceptions import ArchiveError
from ._notebook_link import pointers
from ._session import Session
from ._settings import Settings
from .archive import _archive
from .archive._listing import PastSession, past_sessions
from .archive._replay import ArchivedOutputs
from .models._resolve import LOCAL_MODEL, is_local

INTERRUPTED = "Interrupted: the session ended before this tool call finished."


class Resumable(Protocol):
    session: Session


A = TypeVar("A", bound=Resumable)


def kept_sessions(directory: Path | None = None) -> list[PastSession]:
    """The sessions kept in the data folder, last written first, each with the notebook it
    was last the conversation of (from the notebooks' pointers: current, then earlier)."""
    folder = directory or _archive.data_dir()
    notebooks: dict[str, str] = {}
    found = pointers(folder)
    for _, pointer in found:
        notebooks.setdefault(pointer.session, pointer.notebook)
    for _, pointer in found:
        for session in pointer.earlier:
            notebooks.setdefault(session, pointer.notebook)
    return [replace(past, notebook=notebooks.get(past.id)) for past in past_sessions(folder)]


def archive_for(session: str | Path, options: dict[str, Any]) -> _archive.Archive:
    """The archive a session id (in the data folder the options name) or a file's path
    means; later records go to that same file."""
    path = Path(session)
    settings = options.get("settings")
    folder = _archive.data_dir(settings.get("data_dir") if isinstance(settings, dict) else (
        settings.data_dir if isinstance(settings, Settings) else None))
    if path.suffix == ".jsonl" or path.is_file():
        found = path.expanduser()
    else:
        found = _archive.session_path(str(session), folder)
    if not found.is_file():  # opening would create it: an empty file "latest" then finds
        raise ArchiveError(f"There is no archive of session {str(session)!r} ({found}); "
                           "the sessions kept are in its data folder")
    if found == path.expanduser():
        return _archive.Archive.at(found)
    return _archive.Archive(str(session), folder)


def resume(build: Callable[..., A], session: str | Path, options: dict[str, Any]) -> A:
    """`build(**options)` an agent for the archived session and hand it the archive."""
    archive = archive_for(session, options)
    try:
        replay = _archive.replay(archive.path)
        if replay.model is not None and "model" not in options:
            options["model"] = LOCAL_MODEL if is_local(replay.model) else replay.model
        options.setdefault("system", replay.messages[0]["content"])
        # built to keep an archive (so its output store reads outputs back from one), then
        # handed the one it continues before anything is recorded
        agent = build(session_id=replay.session_id or archive.path.stem, archive=True,
                      **options)
    except BaseException:
        archive.close()
        raise
    live = agent.session
    live.restore(replay)
    if isinstance(replay.outputs, ArchivedOutputs):
        archive.know_outputs(replay.outputs.offsets)
    live.attach_archive(archive, include_current=False)
    for call_id in live.history.pending_tool_calls:  # the process died mid-tool
        live.add({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED})
    state = live.answers.refresh(live.history.messages)
    if state != live.history.messages:  # the live kernel is the ground truth
        live.rewrite(state)
    return agent
