"""Which conversation a notebook continues. A kernel learns its notebook's path from
Jupyter Server (`JPY_SESSION_NAME`), ipykernel (`__session__`) or VS Code
(`__vsc_ipynb_file__`); a small pointer file per notebook path in the data folder names
the session it last chatted in (and the file it was then), and the saved notebook's own
outputs name their sessions (`_notebook_file`). `conversation_for` weighs the two: the
same notebook reopened, renamed, moved or saved under a new name at its first save
continues its conversation; a copy, while the notebook it was copied from still claims
that conversation, starts its own and says which one it was copied from.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._notebook_file import STARTED_IN, identity, notebook_file, sessions_named
from .archive._archive import data_dir
from .archive._private_files import NOTEBOOK_POINTER, private_folder, replace_whole

POINTERS = "notebooks"
EARLIER_KEPT = 50  # the sessions a notebook had before its current one, for `sessions()`
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


def notebook_path(namespace: Mapping[str, Any] | None = None) -> str | None:
    """The path of the notebook this kernel runs, as a front end gave it (stripped, never
    resolved nor joined to anything), else None: a console or a script. The first value
    ending in `.ipynb` of:

    - `JPY_SESSION_NAME`, which Jupyter Server sets when it starts the kernel. Jupyter
      Server 2 with a front end that names the session (JupyterLab, Notebook 7) makes it
      absolute: the kernel's starting folder, which is the notebook's, joined to the
      notebook's name. Otherwise (an older server, a client that sends no name) it is the
      notebook's path relative to the server's root, not to the kernel's working
      directory (which starts in the notebook's folder). Either way it is the path when
      the kernel started: a notebook renamed since keeps its old one here.
    - VS Code's `__vsc_ipynb_file__` in the namespace: the notebook file's absolute path.
    - `__session__` in the namespace: ipykernel's copy of `JPY_SESSION_NAME`, relative or
      absolute as that was.
    """
    candidates = [os.environ.get("JPY_SESSION_NAME")]
    if namespace is not None:
        candidates += [namespace.get("__vsc_ipynb_file__"), namespace.get("__session__")]
    for value in candidates:
        if isinstance(value, str) and value.strip().endswith(".ipynb"):
            return value.strip()
    return None


def notebook_key(path: str) -> str:
    """A file name for the notebook at `path`: its stem (readable) and a hash of the
    resolved path (unique)."""
    resolved = str((STARTED_IN / Path(path).expanduser()).resolve(strict=False))
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    stem = _SLUG.sub("-", Path(path).stem).strip("-.")[:40] or "notebook"
    return f"{stem}-{digest}"


@dataclass
class Pointer:
    """One notebook path's pointer: the session it chats in, the file it was when linked
    (its resolved path and identity, None when not found then) and its earlier sessions."""

    notebook: str
    session: str
    file: str | None = None
    identity: list[int] | None = None
    earlier: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, pointer: Path) -> Pointer | None:
        try:
            with open(pointer, encoding="utf-8") as file:
                record = json.load(file)
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict):
            return None
        notebook, session = record.get("notebook"), record.get("session")
        if not (isinstance(notebook, str) and isinstance(session, str) and session):
            return None
        file_, ident = record.get("file"), record.get("identity")
        earlier = record.get("earlier")
        return cls(notebook, session, file_ if isinstance(file_, str) else None,
                   ident if isinstance(ident, list) and len(ident) == 2 else None,
                   [e for e in earlier if isinstance(e, str)] if isinstance(earlier, list)
                   else [])

    def still_claims(self, session: str) -> bool:
        """Whether the notebook this pointer was made for still has `session`: its file is
        there, the same file, and its saved outputs name the session (or cannot be read)."""
        if self.file is None:
            return False
        file = Path(self.file)
        if self.identity is not None and identity(file) != self.identity:
            return False  # gone, or another file under its old name
        named = sessions_named(file)
        return named is None and file.is_file() or named is not None and session in named


def _pointer_file(path: str, directory: Path | None) -> Path:
    return (directory or data_dir()) / POINTERS / f"{notebook_key(path)}.json"


def pointer_of(path: str, directory: Path | None = None) -> Pointer | None:
    """The pointer of the notebook at `path`, if any."""
    return Pointer.read(_pointer_file(path, directory))


def linked_session(path: str, directory: Path | None = None) -> str | None:
    """The session id the notebook at `path` last chatted in, if any."""
    found = pointer_of(path, directory)
    return found.session if found is not None else None


def pointers(directory: Path | None = None) -> list[tuple[Path, Pointer]]:
    """Every notebook pointer in the data folder, with its file."""
    folder = (directory or data_dir()) / POINTERS
    found = []
    for pointer in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        read = Pointer.read(pointer)
        if read is not None:
            found.append((pointer, read))
    return found


def link(path: str, session_id: str, directory: Path | None = None,
         earlier: list[str] | None = None) -> None:
    """Remember that the notebook at `path` chats in `session_id`, and which file it is now
    (replaced atomically); its previous sessions and `earlier` ones are kept, newest first."""
    folder = (directory or data_dir()) / POINTERS
    private_folder(folder, follow=True)
    target = folder / f"{notebook_key(path)}.json"
    before = Pointer.read(target)
    kept = ([before.session, *before.earlier] if before is not None else []) + (earlier or [])
    kept = [s for s in dict.fromkeys(kept) if s != session_id][:EARLIER_KEPT]
    file = notebook_file(path)
    # not saved yet: where it will be, as this kernel reads the path (it has no identity)
    where = file if file is not None else (STARTED_IN / Path(path).expanduser()).resolve(
        strict=False)
    record = {"notebook": path, "session": session_id, "file": str(where),
              "identity": identity(file), "earlier": kept}
    replace_whole(target, json.dumps(record), kind=NOTEBOOK_POINTER)


@dataclass(frozen=True)
class Conversation:
    """Which conversation a notebook continues (`session`, None: a new one), and why:
    `was` names the notebook it had that conversation as (renamed, moved, saved under a
    new name); `copy_of` the notebook that still claims the conversation this one's
    outputs name (`copied`): this one is a copy and starts its own."""

    session: str | None
    was: str | None = None
    copy_of: str | None = None
    copied: str | None = None
    gone: tuple[Path, ...] = ()  # pointers of notebooks no longer there, to fold in


def conversation_for(path: str, directory: Path,
                     archived: Callable[[str], int | None]) -> Conversation:
    """Which conversation the notebook at `path` continues. `archived(session)` is the
    session's archive sequence (None: no archive). In order:

    1. its own pointer's session, if its notebook file is the one linked, or its outputs
       name that session, or the file cannot be read — unless another notebook still
       claims it (a new notebook under a renamed one's old name);
    2. else the newest session its saved outputs name: continued when no other notebook
       claims it (the one it was renamed or moved from is gone), a copy otherwise;
    3. else none: a new conversation.
    """
    file = notebook_file(path)
    named = sessions_named(file)
    others = [(p, read) for p, read in pointers(directory)
              if p.name != f"{notebook_key(path)}.json"]

    def claimed(session: str) -> Pointer | None:
        return next((read for _, read in others
                     if read.session == session and read.still_claims(session)), None)

    own = pointer_of(path, directory)
    if own is not None and archived(own.session) is not None:
        same = own.identity is None or identity(file) in (None, own.identity)
        if (named is None or own.session in named or same) and claimed(own.session) is None:
            return Conversation(own.session)
    candidates = [s for s in named or () if archived(s) is not None]
    if not candidates:
        return Conversation(None)
    newest = max(candidates, key=lambda s: archived(s) or 0)
    holder = claimed(newest)
    if holder is not None:
        return Conversation(None, copy_of=holder.notebook, copied=newest)
    gone = tuple(p for p, read in others if read.session == newest)
    was = next((read.notebook for _, read in others if read.session == newest), None)
    return Conversation(newest, was=was, gone=gone)
