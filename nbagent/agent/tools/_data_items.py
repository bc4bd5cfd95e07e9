"""The data a delegated task concerns, as its sub-agent is first told of it: each item the
model named — a variable (its listing line), a file the file tools may read (its size), a
folder (the readable files in it, with their sizes: `folder_listing`, which the
`list_files` tool shows too), or anything else as named (an MCP resource's URI, which the
MCP tools read). Bounded, and never a read of the data itself: the sub-agent reads what it
needs with its own tools.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..archive._redact import redact
from ._confinement import check_readable
from ._namespace import variable_lines

MAX_ITEMS = 20  # items described; the rest are named as given
MAX_FOLDER_FILES = 50  # files listed per folder
ITEM_CHARS = 300  # an item as the model wrote it, at most


def _size(size: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def _folder(path: str, resolved: Path, data_folders: Sequence[Path]) -> list[str]:
    """The readable regular files right in the folder (no link followed, no dot-name),
    each checked as `read_file` would check it, then its folders the same way."""
    shown: list[str] = []
    names: list[tuple[str, int]] = []
    folders: list[str] = []
    try:
        with os.scandir(resolved) as entries:
            for entry in entries:
                is_folder = entry.is_dir(follow_symlinks=False)
                if entry.name.startswith(".") or not (
                        is_folder or entry.is_file(follow_symlinks=False)):
                    continue
                child = os.path.join(path, entry.name)
                if check_readable(child, data_folders=data_folders)[0] is None:
                    continue
                if is_folder:
                    folders.append(entry.name)
                else:
                    names.append((entry.name, entry.stat(follow_symlinks=False).st_size))
    except OSError as error:
        return [f"- folder `{path}`: cannot be listed ({error.strerror or error})"]
    names.sort()
    folders.sort()
    shown.append(f"- folder `{path}`: {len(names)} readable file(s)"
                 + (f", the first {MAX_FOLDER_FILES}:" if len(names) > MAX_FOLDER_FILES
                    else ":"))
    shown += [f"  - `{os.path.join(path, name)}` ({_size(size)})"
              for name, size in names[:MAX_FOLDER_FILES]]
    if folders:
        shown.append(f"  and {len(folders)} folder(s): "
                     + ", ".join(f"`{os.path.join(path, name)}/`"
                                 for name in folders[:MAX_FOLDER_FILES])
                     + (", …" if len(folders) > MAX_FOLDER_FILES else ""))
    return shown


def folder_listing(path: str, *, data_folders: Sequence[Path] = ()) -> str:
    """What `list_files` answers: the folder's readable files with their sizes and its
    folders, as a delegated task is told of a folder; a refusal or a file says so."""
    resolved, refusal = check_readable(path, data_folders=data_folders)
    if resolved is None:
        return refusal
    if not resolved.is_dir():
        return f"{path} is not a folder: read_file reads a file."
    return redact("\n".join(_folder(path, resolved, data_folders)))


def _item(item: str, namespace: Mapping[str, Any], data_folders: Sequence[Path]) -> list[str]:
    if item.isidentifier() and item in namespace:
        lines = variable_lines({item: namespace[item]}, max_tokens=200)
        if lines:
            return [f"- variable {lines[0]}", *(f"  {line}" for line in lines[1:])]
    resolved, refusal = check_readable(item, data_folders=data_folders)
    if resolved is not None:
        try:
            status = os.lstat(resolved)
        except OSError:
            status = None
        if status is not None and stat.S_ISDIR(status.st_mode):
            return _folder(item, resolved, data_folders)
        if status is not None and stat.S_ISREG(status.st_mode):
            return [f"- file `{item}` ({_size(status.st_size)}; read_file pages it)"]
    elif refusal.startswith("Refused"):
        return [f"- `{item}`: {refusal}"]
    return [f"- `{item}` (not a variable or a readable file: reach it with the tool that "
            "serves it, an MCP server's for a resource)"]


def briefing(items: Sequence[str], namespace: Mapping[str, Any], *,
             data_folders: Sequence[Path] = ()) -> str:
    """The items described one by one (empty when there are none); `data_folders`: the
    session's own data folder, refused as `read_file` refuses it."""
    lines: list[str] = []
    for number, raw in enumerate(items):
        item = str(raw).strip()[:ITEM_CHARS]
        if not item:
            continue
        if number >= MAX_ITEMS:
            lines.append(f"- `{item}`")
            continue
        lines += _item(item, namespace, data_folders)
    return redact("\n".join(lines))
