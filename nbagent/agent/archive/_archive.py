"""The transcript archive: an append-only JSON Lines file per session holding every
message as it was added, every full tool output, every compaction's result (written
and synced before the history is rewritten) and every decision record. This module
owns the record format: others write through `Archive` and read through `replay`,
`recall` and `Archive.output`. Secrets are redacted on the way to disk (`_redact`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...engine._exceptions import ArchiveError, NbagentWarning
from ._private_files import (
    open_files,
    open_for_append,
    open_for_reading,
    open_lock,
    private_folder,
    release,
    try_lock,
)
from ._redact import REDACTED, Redactor, redact

__all__ = ["REDACTED", "Archive", "ArchiveError", "Replay", "data_dir", "latest_session",
           "new_session_id", "read_records", "recall", "redact", "replay", "session_path"]

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {  # what each kind must carry
    "session": (("model", str),),
    "message": (("message", dict),),
    "rewrite": (("messages", list),),
    "output": (("ref", str), ("text", str)),
    "decision": (("decision", dict),),
    "event": (("event", str),),
}


def data_dir() -> Path:
    """Where sessions are kept: NBAGENT_DATA_DIR, else the user's data directory."""
    from .._settings import Settings

    configured = Settings.from_env().data_dir
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(base).expanduser() / "nbagent"


def latest_session(directory: Path | None = None) -> str:
    """The id of the most recently written session archive."""
    found = sorted((p for p in (directory or data_dir()).glob("sessions/*.jsonl")
                    if p.is_file() and not p.is_symlink()), key=lambda p: p.stat().st_mtime)
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


def _encode(record: Mapping[str, Any]) -> bytes:
    """One JSON line. Text that UTF-8 cannot hold (lone surrogates from undecodable file
    names) is written with \\u escapes, so it reads back exactly as it was."""
    text = json.dumps(record, ensure_ascii=False, default=str)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, ensure_ascii=True, default=str) + "\n").encode("ascii")


class Archive:
    """The append-only JSON Lines transcript of one session, open for writing.

    Opening it takes the session: a second `Archive` on the same file (in this process
    or another) raises `ArchiveError` until this one is closed (`close()`, the end of a
    `with` block, garbage collection or the end of the process). If the file cannot be
    written, one warning is given and the writes are skipped: the chat goes on.
    """

    def __init__(self, session_id: str, directory: Path | None = None) -> None:
        root = directory or data_dir()
        path = session_path(session_id, root)
        self._open(session_id, path, folders=(root, root / "sessions"))

    @classmethod
    def at(cls, path: str | Path) -> Archive:
        """The archive file at `path`, wherever it is (appends go to that same file)."""
        archive = cls.__new__(cls)
        path = Path(path).expanduser()
        archive._open(path.stem, path, folders=())
        return archive

    def _open(self, session_id: str, path: Path, folders: Sequence[Path]) -> None:
        self.session_id = session_id
        self.path = path
        self.failed: str | None = None
        self._descriptor: int | None = None
        self._close: weakref.finalize | None = None  # type: ignore[type-arg]
        self._write_lock = threading.Lock()
        self._offsets: dict[str, int] = {}  # output ref -> where its record starts
        self._indexed = False
        try:
            for number, folder in enumerate(folders):
                private_folder(folder, follow=number == 0)
            descriptor = open_for_append(path)
        except OSError as error:
            self._fail(error)
            return
        status = os.fstat(descriptor)
        key = (status.st_dev, status.st_ino)
        with open_lock:
            taken = key in open_files or not try_lock(descriptor)
            if not taken:
                open_files.add(key)
        if taken:
            os.close(descriptor)
            raise ArchiveError(f"session {session_id} is open in another agent or process "
                               f"({path}); close it there first, or start a new session")
        self._descriptor = descriptor
        self._close = weakref.finalize(self, release, descriptor, key)

    def close(self) -> None:
        """Release the session (another agent may then resume it). Idempotent."""
        if self._close is not None:
            self._close()
        self._descriptor = None

    @property
    def closed(self) -> bool:
        return self._descriptor is None

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fail(self, error: BaseException) -> None:
        self.failed = f"{type(error).__name__}: {error}"
        warnings.warn(f"nbagent cannot write its session archive ({self.failed}); the chat "
                      "goes on, but this session will not be recoverable", NbagentWarning,
                      stacklevel=4)

    def write(self, kind: str, payload: Mapping[str, Any], *, sync: bool = False) -> None:
        """Append one record, secrets redacted; `sync` forces it to disk before returning
        (write-ahead). Never raises: a failure warns once and later writes are skipped."""
        if self.failed is not None:
            return
        try:
            line = _encode({"kind": kind, **Redactor().value(dict(payload))})
        except (TypeError, ValueError, RecursionError) as error:
            self._fail(error)
            return
        with self._write_lock:
            descriptor = self._descriptor
            if descriptor is None:
                self._fail(ArchiveError(f"{self.path} was closed"))
                return
            try:
                start = os.fstat(descriptor).st_size if kind == "output" else 0
                view = memoryview(line)
                while view:
                    view = view[os.write(descriptor, view):]
                if sync:
                    os.fsync(descriptor)
            except OSError as error:
                self._fail(error)
                return
            if kind == "output":
                self._offsets[str(payload["ref"])] = start

    def write_session(self, model: str, session_id: str, **details: Any) -> None:
        """The session's start (or a resume): its model, id and e.g. `api_base`."""
        self.write("session", {"model": model, "id": session_id, **details})

    def write_message(self, message: Mapping[str, Any]) -> None:
        self.write("message", {"message": message})

    def write_output(self, ref: str, text: str) -> None:
        """A full tool output, for `output(ref)` to give back after it left memory."""
        self.write("output", {"ref": ref, "text": text})

    def write_rewrite(self, messages: Sequence[Mapping[str, Any]], sync: bool = True) -> None:
        """The history a compaction is about to swap in, synced before the swap."""
        self.write("rewrite", {"messages": list(messages)}, sync=sync)

    def write_decision(self, decision: Mapping[str, Any]) -> None:
        self.write("decision", {"decision": decision})

    def write_event(self, event: str, detail: Mapping[str, Any] | None = None) -> None:
        """Anything else worth keeping (an interrupt, a learned window): `replay` lists them."""
        self.write("event", {"event": event, "detail": dict(detail or {})})

    def output(self, ref: str) -> str | None:
        """A stored full output (as archived: secrets redacted), or None."""
        if ref not in self._offsets and not self._indexed:
            self._index_outputs()
        start = self._offsets.get(ref)
        if start is None:
            return None
        try:
            with open_for_reading(self.path) as handle:
                handle.seek(start)
                record = json.loads(handle.readline().decode("utf-8"))
        except (OSError, ValueError):
            return None
        if isinstance(record, dict) and record.get("ref") == ref:
            text = record.get("text")
            return text if isinstance(text, str) else None
        return None

    def _index_outputs(self) -> None:
        self._indexed = True
        found: dict[str, int] = {}
        position = 0
        try:
            with open_for_reading(self.path) as handle:
                for line in handle:
                    if line.startswith(b'{"kind": "output"') and line.endswith(b"\n"):
                        try:
                            ref = json.loads(line.decode("utf-8")).get("ref")
                        except (ValueError, AttributeError):
                            ref = None
                        if isinstance(ref, str):
                            found[ref] = position
                    position += len(line)
        except OSError:
            return
        self._offsets = {**found, **self._offsets}


def _damaged(path: Path, number: int, problem: str) -> ArchiveError:
    return ArchiveError(f"{path.name} line {number} {problem}: the archive is corrupted "
                        f"({path})")


def _check(record: Any, path: Path, number: int) -> dict[str, Any]:
    if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
        raise _damaged(path, number, "is not an archive record")
    for name, kind in _FIELDS.get(record["kind"], ()):
        if not isinstance(record.get(name), kind):
            raise _damaged(path, number, f"({record['kind']}) has no valid {name!r}")
    if record["kind"] == "message" and not isinstance(record["message"].get("role"), str):
        raise _damaged(path, number, "holds a message without a role")
    if record["kind"] == "rewrite" and not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in record["messages"]):
        raise _damaged(path, number, "holds a rewrite that is not a list of messages")
    if record["kind"] == "decision" and not isinstance(record["decision"].get("failures", 0),
                                                       int):
        raise _damaged(path, number, "holds a decision with a bad failure count")
    return record


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of an archive file, checked. An unfinished last line (the process died
    mid-write: no newline) is skipped with a warning; any other damage (bad JSON, bytes
    that are not UTF-8, a record without its fields) is an `ArchiveError` naming the line."""
    try:
        handle = open_for_reading(path)
    except OSError as error:
        raise ArchiveError(f"cannot read the session archive {path}: {error}") from error
    with handle:
        lines = iter(handle)
        number, line = 1, next(lines, None)
        while line is not None:
            following = next(lines, None)
            if line.strip():
                try:
                    record = json.loads(line.decode("utf-8"))
                except (ValueError, RecursionError) as error:
                    rest = [] if following is None else [following, *lines]
                    if not line.endswith(b"\n") and not any(later.strip() for later in rest):
                        warnings.warn(f"skipped a truncated last line ({number}) of {path.name}",
                                      NbagentWarning, stacklevel=2)
                        return
                    problem = ("is not UTF-8 text" if isinstance(error, UnicodeDecodeError)
                               else "is not valid JSON")
                    raise _damaged(path, number, problem) from None
                yield _check(record, path, number)
            number, line = number + 1, following


@dataclass(frozen=True)
class Replay:
    """A session as its archive last left it: what `Agent.resume` rebuilds from."""

    path: Path
    session_id: str
    model: str | None  # the model of the latest session record
    messages: list[dict[str, Any]]  # messages appended, rewrites replacing
    outputs: dict[str, str] = field(default_factory=dict)  # full tool outputs by ref
    failures: int = 0  # the breaker's count in the last decision
    events: list[dict[str, Any]] = field(default_factory=list)  # {"event":..., "detail":...}


def replay(path: str | Path) -> Replay:
    """Read a whole archive back; an archive without a session in it is an `ArchiveError`."""
    path = Path(path)
    session_id, model = path.stem, None
    messages: list[dict[str, Any]] = []
    outputs: dict[str, str] = {}
    events: list[dict[str, Any]] = []
    failures = 0
    for record in read_records(path):
        kind = record["kind"]
        if kind == "session":
            model = record["model"]
            session_id = str(record.get("id") or session_id)
        elif kind == "message":
            messages.append(record["message"])
        elif kind == "rewrite":
            messages = list(record["messages"])
        elif kind == "output":
            outputs[record["ref"]] = record["text"]
        elif kind == "decision":
            failures = record["decision"].get("failures", 0)
        elif kind == "event":
            events.append({"event": record["event"], "detail": record.get("detail", {})})
    if not messages or messages[0].get("role") != "system":
        raise ArchiveError(f"{path.name} holds no session to resume ({path})")
    return Replay(path, session_id, model, messages, outputs, failures, events)


def recall(source: Archive | str | Path | None, query: str = "", message: int = -1,
           offset: int = 0, limit: int = 5) -> str:
    """The `recall` tool's answer: search the archived messages (newest first when the
    query is empty), or give one archived message whole by its number."""
    path = source.path if isinstance(source, Archive) else None if source is None \
        else Path(source)
    if path is None or not path.exists():
        return "No session archive to recall from."
    try:
        messages = [r["message"] for r in read_records(path) if r["kind"] == "message"]
    except ArchiveError as error:
        return f"The session archive cannot be read: {error}"
    if message >= 0:
        if message >= len(messages):
            return f"No archived message {message}; there are {len(messages)}."
        return json.dumps(messages[message], ensure_ascii=False)[:8_000]
    needle = query.lower()
    hits = [(i, m) for i, m in enumerate(messages)
            if needle in _searchable(m)]
    if not needle:
        hits = hits[::-1]
    page = hits[max(0, offset): max(0, offset) + max(1, min(limit, 10))]
    lines = [f"{len(hits)} archived messages match{'' if needle else ' (newest first)'}; "
             f"showing {len(page)} from {offset}:"]
    for index, found in page:
        text = str(found.get("content") or json.dumps(found.get("tool_calls")))
        lines.append(f"#{index} {found['role']}: {text[:300]}")
    return "\n".join(lines)


def _searchable(message: Mapping[str, Any]) -> str:
    """A message's text as the user would search it, lower-cased: its content, the
    tool-call ids (the recall handles snip placeholders name) and each call's name and
    arguments (not its JSON, where quotes and backslashes are escaped)."""
    parts = [str(message.get("content") or ""), str(message.get("tool_call_id") or "")]
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        parts.append(str(call.get("id") or "") if isinstance(call, dict) else "")
        if isinstance(function, dict):
            arguments = str(function.get("arguments") or "")
            parts += [str(function.get("name") or ""), arguments]
            try:  # the values as written, not JSON-escaped
                parsed = json.loads(arguments)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, dict):
                parts += [str(value) for value in parsed.values()]
    return "\n".join(parts).lower()
