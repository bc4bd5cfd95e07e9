"""The transcript archive, gathered: an append-only JSON Lines file per session holding
every message as it was added, every full tool output, every compaction (written and
synced before the history is rewritten) and every decision record. Its parts, one
concept each: the record kinds (`_kinds`, one table), the line format (`_records`),
where files live (`_paths`), writing (`_writer`), reading back (`_replay`), search
(`_recall`), private files and redaction. This module only re-exports them.
"""

from __future__ import annotations

from ...engine._exceptions import ArchiveError
from ._kinds import KINDS, RecordKind, table
from ._paths import check_session_id, data_dir, latest_session, new_session_id, session_path
from ._recall import recall
from ._records import read_records
from ._redact import REDACTED, redact
from ._replay import Replay, replay
from ._writer import Archive

__all__ = ["KINDS", "REDACTED", "Archive", "ArchiveError", "RecordKind", "Replay",
           "check_session_id", "data_dir", "latest_session", "new_session_id", "read_records",
           "recall", "redact", "replay", "session_path", "table"]
