"""Past sessions as a list to choose from: each archive's id, when it started and was
last written, and its first request, newest first. Read from each file's first records
only (bounded), never a whole archive; which notebook had a session is the agent room's
(`_notebook_link`'s pointers).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from ...engine._markers import is_plain_user
from ._paths import data_dir
from ._private_files import open_for_reading

HEAD_BYTES = 1 << 20  # how far into an archive its first request is looked for
_ID_TIME = "%Y%m%d-%H%M%S"


@dataclass(frozen=True)
class PastSession:
    """One archived session: its `id`, when it `started` and was `last` written (epoch
    seconds), its `first_request` ("" when it has none yet), and the `notebook` it was
    last the conversation of (None: not known, or not a notebook's)."""

    id: str
    started: float
    last: float
    first_request: str
    notebook: str | None = None


def first_request(path: Path, limit: int = HEAD_BYTES) -> str:
    """The first message the user typed in the archive at `path` ("" if none within its
    first `limit` bytes, or the file cannot be read)."""
    try:
        with open_for_reading(path) as handle:
            head = handle.read(limit)
    except OSError:
        return ""
    for line in head.split(b"\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if not isinstance(message, dict) and isinstance(record, dict):
            messages = record.get("messages")  # a rewrite: the history as a whole
            message = next((m for m in messages if isinstance(m, dict) and is_plain_user(m)),
                           None) if isinstance(messages, list) else None
        if isinstance(message, dict) and is_plain_user(message):
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return content if isinstance(content, str) else ""
    return ""


def _started(session_id: str, path: Path) -> float:
    try:
        return time.mktime(time.strptime(session_id[:15], _ID_TIME))
    except ValueError:
        return path.stat().st_mtime


def past_sessions(directory: Path | None = None) -> list[PastSession]:
    """Every archived session in `directory`'s sessions folder, last written first."""
    folder = (directory or data_dir()) / "sessions"
    found = []
    for path in folder.glob("*.jsonl") if folder.is_dir() else ():
        try:
            if path.is_symlink() or not path.is_file():
                continue
            last = path.stat().st_mtime
        except OSError:
            continue
        found.append(PastSession(path.stem, _started(path.stem, path), last,
                                 first_request(path)))
    return sorted(found, key=lambda s: (s.last, s.id), reverse=True)
