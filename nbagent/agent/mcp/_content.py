"""An MCP tool result as text for the model: text blocks joined, every other block
(image, audio, embedded resource, resource link) as a one-line description of what it
is — never its bytes. Whether the result is an error is kept beside the text.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types


def _size(data: str) -> str:
    """The decoded size of base64 `data`, in words."""
    try:
        count = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        count = len(data)
    if count < 1024:
        return f"{count:,} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


def describe_block(block: types.ContentBlock) -> str:
    """One content block as text (the text itself for a text block)."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)}; not shown to the model]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)}; not shown to the model]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        mime = resource.mime_type or "unknown type"
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri} ({mime})]\n{resource.text}"
        return f"[resource {resource.uri}: {mime}, {_size(resource.blob)}; binary, not shown]"
    if isinstance(block, types.ResourceLink):
        details = ", ".join(part for part in (
            block.mime_type, f"{block.size:,} bytes" if block.size is not None else None,
            block.description) if part)
        return f"[resource link {block.uri} ({block.name}{', ' + details if details else ''})]"
    return f"[{getattr(block, 'type', type(block).__name__)} content; not shown]"


def _structured(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def result_text(result: types.CallToolResult) -> str:
    """What the model reads of a tool result (an error result's text is the server's)."""
    parts = [describe_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts = [_structured(result.structured_content)]
    text = "\n".join(part for part in parts if part)
    if result.is_error:
        return text or "the tool reported an error without a message"
    return text or "(no output)"
