"""The transcript archive: an append-only JSON Lines file per session holding every
message as it was added, every full tool output, every compaction's result
(written and synced before the history is rewritten) and every decision record.
Secrets are redacted on the way in. If the file cannot be written, the chat goes
on with one warning: the archive never fails a user's request.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ._exceptions import NbagentError, NbagentWarning

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_SECRET_NAMES = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
_SECRET_SHAPES = re.compile(
    r"(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}|(?i:bearer)\s+[A-Za-z0-9._~+/-]{8,}=*|"
    r"(?i:x-api-key|api[_-]?key|authorization)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9._~+/-]{8,}"
)
REDACTED = "[redacted]"


class ArchiveError(NbagentError):
    """A session archive that cannot be used: a bad session id, an unreadable file."""


def data_dir() -> Path:
    """Where sessions are kept: NBAGENT_DATA_DIR, else the user's data directory."""
    from ._settings import Settings

    configured = Settings.from_env().data_dir
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(base).expanduser() / "nbagent"


def redact(text: str) -> str:
    """Remove API keys and auth headers: the values of secret-looking environment
    variables, and anything shaped like a key or a bearer token."""
    for name, value in os.environ.items():
        if len(value) >= 8 and _SECRET_NAMES.search(name) and value in text:
            text = text.replace(value, REDACTED)
    return _SECRET_SHAPES.sub(REDACTED, text)


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


def latest_session(directory: Path | None = None) -> str:
    """The id of the most recently written session archive."""
    found = sorted((directory or data_dir()).glob("sessions/*.jsonl"),
                   key=lambda p: p.stat().st_mtime)
    if not found:
        raise ArchiveError(f"No session archives in {(directory or data_dir()) / 'sessions'}")
    return found[-1].stem


def new_session_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def session_path(session_id: str, directory: Path | None = None) -> Path:
    """The archive file of `session_id`; ids with path characters are refused."""
    if not _SESSION_ID.match(session_id):
        raise ArchiveError(f"session id {session_id!r} may hold only letters, digits, '_', '.' "
                           "and '-', and must not start with '.' or '-'")
    return (directory or data_dir()) / "sessions" / f"{session_id}.jsonl"


class Archive:
    """Append-only JSON Lines transcript of one session."""

    def __init__(self, session_id: str, directory: Path | None = None) -> None:
        self.session_id = session_id
        self.path = session_path(session_id, directory)
        self.failed: str | None = None

    def _fail(self, error: OSError) -> None:
        self.failed = f"{type(error).__name__}: {error}"
        warnings.warn(f"nbagent cannot write its session archive ({self.failed}); the chat "
                      "goes on, but this session will not be recoverable", NbagentWarning,
                      stacklevel=4)

    def write(self, kind: str, payload: Mapping[str, Any], *, sync: bool = False) -> None:
        """Append one record; `sync` forces it to disk before returning (write-ahead).

        The file is opened for each record: no descriptor is held between writes, and
        every record is complete on disk when this returns.
        """
        if self.failed is not None:
            return
        line = json.dumps({"kind": kind, **_redact_value(dict(payload))}, ensure_ascii=False,
                          default=str) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(descriptor, line.encode("utf-8"))
                if sync:
                    os.fsync(descriptor)
            finally:
                os.close(descriptor)
        except OSError as error:
            self._fail(error)


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of an archive file. A truncated or corrupt last line (the process
    died mid-write) is skipped with a warning; corruption elsewhere is an error."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ArchiveError(f"cannot read the session archive {path}: {error}") from error
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                warnings.warn(f"skipped a truncated last line ({number}) of {path.name}",
                              NbagentWarning, stacklevel=2)
                return
            raise ArchiveError(f"{path.name} line {number} is not valid JSON: the archive is "
                               "corrupted") from None
        if not isinstance(record, dict) or "kind" not in record:
            raise ArchiveError(f"{path.name} line {number} is not an archive record")
        yield record
