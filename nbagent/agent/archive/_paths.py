"""Where archives live and which one an id means: the data folder, session ids (letters,
digits, `_ . -` only: no control character, no path separator), a session's file, and
the latest session, read from the archives' own session records (their `sequence`), not
from file times a clock step or a copy can reorder.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import secrets
import time
from pathlib import Path

from ...engine._exceptions import ArchiveError
from ._kinds import header_kind
from ._private_files import open_for_reading

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def data_dir(configured: str | None = None) -> Path:
    """Where sessions are kept — the one place that says so: `configured` (an agent's
    `data_dir` setting), else NBAGENT_DATA_DIR, else the user's data directory
    ($XDG_DATA_HOME when absolute, else ~/.local/share)."""
    if configured is None:
        from .._settings import Settings

        configured = Settings.from_env().data_dir
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    # The XDG spec: a relative path in XDG_DATA_HOME is invalid and ignored (else the
    # archives would move with the kernel's working directory).
    # `~` is expanded first, as before, for a value a shell did not expand.
    if not Path(base).expanduser().is_absolute():
        base = "~/.local/share"
    return Path(base).expanduser() / "nbagent"


def new_session_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def check_session_id(session_id: str) -> str:
    """`session_id` if it is a valid id (the whole of it: a trailing newline is not)."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise ArchiveError(f"session id {session_id!r} may hold only letters, digits, '_', '.' "
                           "and '-', and must not start with '.' or '-'")
    return session_id


def session_path(session_id: str, directory: Path | None = None) -> Path:
    """The archive file of `session_id`; ids with path characters are refused."""
    return (directory or data_dir()) / "sessions" / f"{check_session_id(session_id)}.jsonl"


def last_sequence(path: Path) -> int | None:
    """The `sequence` of the last session record in `path` (None: it has none), found
    by a byte search from the end, without parsing the records before it (the session's
    kind is the table's header kind; the writer puts `kind` first in every record)."""
    marker = b'{"kind": "' + (header_kind() or "session").encode() + b'"'
    try:
        with open_for_reading(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return None
            with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as view:
                end = size
                while end > 0:
                    found = view.rfind(marker, 0, end)
                    if found < 0:
                        return None
                    if found == 0 or view[found - 1] == 10:
                        stop = view.find(b"\n", found)
                        line = view[found: stop if stop >= 0 else size]
                        try:
                            sequence = json.loads(line.decode("utf-8")).get("sequence")
                        except (ValueError, AttributeError):
                            sequence = None
                        return sequence if isinstance(sequence, int) else None
                    end = found
    except (OSError, ValueError):
        return None
    return None


def _archives(directory: Path) -> list[Path]:
    return [p for p in (directory / "sessions").glob("*.jsonl")
            if p.is_file() and not p.is_symlink()]


def next_sequence(directory: Path) -> int:
    """One more than the highest sequence any archive in `directory` holds."""
    return 1 + max((last_sequence(p) or 0 for p in _archives(directory)), default=0)


def latest_session(directory: Path | None = None) -> str:
    """The id of the session whose archive holds the highest sequence (archives written
    before sequences existed come first, in file-time order)."""
    root = directory or data_dir()
    found = _archives(root)
    if not found:
        raise ArchiveError(f"No session archives in {root / 'sessions'}")

    def order(path: Path) -> tuple[int, float]:
        sequence = last_sequence(path)
        return (sequence, 0.0) if sequence is not None else (0, path.stat().st_mtime)

    return max(found, key=order).stem
