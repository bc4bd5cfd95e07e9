"""What a saved notebook file says about its conversations: the session ids its outputs
carry in their metadata (`{"nbagent": {"session": ...}}`, written by the notebook room on
each chat cell's meter line), where the file is as seen from this kernel, and which file
it is (device and inode: a rename or a move keeps them, a copy gets its own). Reading
only, bounded; nothing here decides which conversation continues (`_notebook_link`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

OUTPUT_KEY = "nbagent"  # the key of a notebook output's metadata that names its session
MAX_NOTEBOOK_BYTES = 256 << 20  # a larger notebook is not read for its sessions

# A relative notebook path (an older Jupyter Server's) is read from the folder the kernel
# was in when nbagent was imported, not the working directory of the moment: a notebook
# whose code changes directory must keep finding its conversation.
try:
    STARTED_IN = Path.cwd()
except OSError:  # the folder was deleted: absolute paths still work as they are
    STARTED_IN = Path.home()


def output_metadata(session_id: str) -> dict[str, Any]:
    """The metadata a notebook output of session `session_id` carries: the saved notebook
    then names its conversation wherever the file goes."""
    return {OUTPUT_KEY: {"session": session_id}}


def notebook_file(path: str) -> Path | None:
    """The notebook file `path` names, as this kernel finds it, or None. An absolute path
    is taken as it is; a relative one (relative to the server's root, which the kernel
    does not know) is looked for by its name in the kernel's starting folder — the
    notebook's own — and then as given from there."""
    given = Path(path).expanduser()
    tried = [given] if given.is_absolute() else [STARTED_IN / given.name, STARTED_IN / given]
    for candidate in tried:
        try:
            if candidate.is_file():
                return candidate.resolve()
        except OSError:
            continue
    return None


def identity(file: Path | None) -> list[int] | None:
    """Which file this is: [device, inode] (a rename or a move within a disk keeps it; a
    copy, a new notebook under an old name, gets its own), or None."""
    if file is None:
        return None
    try:
        status = os.stat(file)
    except OSError:
        return None
    return [status.st_dev, status.st_ino]


def sessions_named(file: Path | None) -> list[str] | None:
    """The session ids `file`'s outputs (and its own metadata) carry, in the order they
    first appear; None when the file cannot be read as a notebook (missing, too large,
    not JSON), [] when it can and names none."""
    if file is None:
        return None
    try:
        if os.stat(file).st_size > MAX_NOTEBOOK_BYTES:
            return None
        with open(file, encoding="utf-8") as handle:
            notebook = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(notebook, dict):
        return None
    found: list[str] = []
    sources: list[Any] = [notebook.get("metadata")]
    for cell in notebook.get("cells") or ():
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        if isinstance(outputs, list):
            sources += [o.get("metadata") for o in outputs if isinstance(o, dict)]
    for metadata in sources:
        named = metadata.get(OUTPUT_KEY) if isinstance(metadata, dict) else None
        session = named.get("session") if isinstance(named, dict) else None
        if isinstance(session, str) and session and session not in found:
            found.append(session)
    return found
