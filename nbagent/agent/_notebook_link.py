"""Which conversation a notebook continues. A kernel learns its notebook's path from
Jupyter Server (`JPY_SESSION_NAME`), ipykernel (`__session__`) or VS Code
(`__vsc_ipynb_file__`); a small pointer file per notebook in the data folder names the
session it last chatted in, so reopening the notebook continues that conversation.
A renamed or copied notebook has another path, so it starts its own conversation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .archive._archive import data_dir
from .archive._private_files import private_folder

POINTERS = "notebooks"
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


# A relative notebook path (an older Jupyter Server's) is keyed from the folder the kernel
# was in when nbagent was imported, not the working directory of the moment: a notebook
# whose code changes directory must keep finding its conversation.
try:
    _STARTED_IN = Path.cwd()
except OSError:  # the folder was deleted: absolute paths still key as they are
    _STARTED_IN = Path.home()


def notebook_key(path: str) -> str:
    """A file name for the notebook at `path`: its stem (readable) and a hash of the
    resolved path (unique)."""
    resolved = str((_STARTED_IN / Path(path).expanduser()).resolve(strict=False))
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    stem = _SLUG.sub("-", Path(path).stem).strip("-.")[:40] or "notebook"
    return f"{stem}-{digest}"


def linked_session(path: str, directory: Path | None = None) -> str | None:
    """The session id the notebook at `path` last chatted in, if any."""
    pointer = (directory or data_dir()) / POINTERS / f"{notebook_key(path)}.json"
    try:
        with open(pointer, encoding="utf-8") as file:
            record = json.load(file)
    except (OSError, ValueError):
        return None
    session = record.get("session") if isinstance(record, dict) else None
    return session if isinstance(session, str) and session else None


def link(path: str, session_id: str, directory: Path | None = None) -> None:
    """Remember that the notebook at `path` chats in `session_id` (replaced atomically)."""
    folder = (directory or data_dir()) / POINTERS
    private_folder(folder, follow=True)
    target = folder / f"{notebook_key(path)}.json"
    temporary = folder / f".{target.name}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump({"notebook": path, "session": session_id}, file)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
