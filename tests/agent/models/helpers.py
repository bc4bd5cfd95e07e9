"""A GGUF file's header as llama.cpp writes one, for the tests that find and read them, and
a tool as the embedded model's prompt and chat handler are offered it."""

from __future__ import annotations

import struct
from pathlib import Path

SHOW_ROWS = {"type": "function", "function": {
    "name": "show_rows", "description": "Show rows of the table.\n\nArgs:\n  start: first row.",
    "parameters": {"type": "object", "properties": {
        "start": {"type": "integer", "description": "the first row"},
        "column": {"type": "string", "description": "a column"}}, "required": ["column"]}}}
CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}"


def gguf(path: Path, *, context: int | None = 32768, template: str | None = CHATML,
         magic: bytes = b"GGUF") -> Path:
    """A GGUF header as llama.cpp writes one (no tensors): the architecture, its context
    length, a vocabulary array (skipped by the reader) and the chat template."""
    def text(value: str) -> bytes:
        return struct.pack("<Q", len(value.encode())) + value.encode()

    pairs = [text("general.architecture") + struct.pack("<I", 8) + text("llama"),
             text("general.file_type") + struct.pack("<I", 4) + struct.pack("<I", 15),
             text("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3)
             + b"".join(text(t) for t in ("<s>", "hi", "there")),
             text("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + b"\0" * 12]
    if context is not None:
        pairs.append(text("llama.context_length") + struct.pack("<II", 4, context))
    if template is not None:
        pairs.append(text("tokenizer.chat_template") + struct.pack("<I", 8) + text(template))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(magic + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(pairs))
    return path
