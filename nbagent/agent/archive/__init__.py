"""The transcript archive, the agent room's door to it: one append-only JSON Lines file per
session (`Archive`), its record kinds as one table (`KINDS`, `RecordKind`, `BY_KIND`, the
`ReplayState` a row's replay step fills, and `NOT_RECORDED`: the events it leaves out on
purpose), reading it back (`replay`, `read_records`, `read_lines`, `ArchivedOutputs`),
search (`recall`), where files live (`data_dir`, `session_path`, `latest_session`) and
redaction at rest (`redact`, `redact_value`, `Redactor`, `find_secrets`, `looks_secret`,
`secret_env_values`, the `SHAPES` table) and the one writer of the files nbagent writes
(the `WRITTEN` table, its rows, and `replace_whole`, `open_for_append`, `open_for_lock`,
`temporary_file`, `set_aside`, `private_folder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._doors import lazy_door

if TYPE_CHECKING:
    from ._archive import (
        KINDS,
        REDACTED,
        Archive,
        ArchiveError,
        RecordKind,
        Replay,
        check_session_id,
        data_dir,
        latest_session,
        new_session_id,
        read_records,
        recall,
        redact,
        replay,
        session_path,
        table,
    )
    from ._kinds import BY_KIND, NOT_RECORDED, ReplayState
    from ._private_files import (
        ARCHIVE_SET_ASIDE,
        NOTEBOOK_POINTER,
        RECALL_INDEX,
        SERVER_CLIENTS,
        SERVER_LOCK,
        SERVER_LOG,
        SERVER_RECORD,
        SESSION_ARCHIVE,
        WRITTEN,
        WrittenFile,
        open_for_append,
        open_for_lock,
        private_folder,
        replace_whole,
        set_aside,
        temporary_file,
    )
    from ._records import read_lines
    from ._redact import Redactor, find_secrets, looks_secret, redact_value, secret_env_values
    from ._replay import ArchivedOutputs
    from ._shapes import SHAPES

# The names load on first use, not here: the record kinds import the tools folder's
# `_code_ran` while the built-in tools import the archive, so importing them here would
# turn that into a circle between the two packages, whichever is entered first.
_PARTS = ("._archive", "._kinds", "._private_files", "._records", "._redact", "._replay",
          "._shapes")

__all__ = [
    "ARCHIVE_SET_ASIDE",
    "NOTEBOOK_POINTER",
    "RECALL_INDEX",
    "SERVER_CLIENTS",
    "SERVER_LOCK",
    "SERVER_LOG",
    "SERVER_RECORD",
    "SESSION_ARCHIVE",
    "WRITTEN",
    "WrittenFile",
    "open_for_append",
    "open_for_lock",
    "private_folder",
    "replace_whole",
    "set_aside",
    "temporary_file",
    "BY_KIND",
    "KINDS",
    "NOT_RECORDED",
    "REDACTED",
    "SHAPES",
    "Archive",
    "ArchiveError",
    "ArchivedOutputs",
    "RecordKind",
    "Redactor",
    "Replay",
    "ReplayState",
    "check_session_id",
    "data_dir",
    "find_secrets",
    "latest_session",
    "looks_secret",
    "new_session_id",
    "read_lines",
    "read_records",
    "recall",
    "redact",
    "redact_value",
    "replay",
    "secret_env_values",
    "session_path",
    "table",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = lazy_door(globals(), _PARTS)  # see above
