"""MCP tool results as text: text joined, other content as a short description, never
its bytes; an empty result still says something."""

from __future__ import annotations

import base64

import mcp_types as types

from nbagent.agent.mcp._content import result_text


def test_text_blocks_are_joined_and_others_described_without_their_bytes() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\0" * 3000).decode()
    result = types.CallToolResult(content=[
        types.TextContent(text="chart drawn"),
        types.ImageContent(data=png, mime_type="image/png"),
        types.AudioContent(data=base64.b64encode(b"RIFF" * 10).decode(), mime_type="audio/wav"),
        types.EmbeddedResource(resource=types.BlobResourceContents(
            uri="file:///r.bin", mime_type="application/octet-stream",
            blob=base64.b64encode(b"\1" * 2_000_000).decode())),
        types.EmbeddedResource(resource=types.TextResourceContents(
            uri="file:///notes.md", mime_type="text/markdown", text="# notes")),
        types.ResourceLink(uri="file:///data.csv", name="data.csv", mime_type="text/csv", size=99),
    ])
    assert result_text(result).splitlines() == [
        "chart drawn",
        "[image: image/png, 2.9 KB; not shown to the model]",
        "[audio: audio/wav, 40 bytes; not shown to the model]",
        "[resource file:///r.bin: application/octet-stream, 1.9 MB; binary, not shown]",
        "[resource file:///notes.md (text/markdown)]",
        "# notes",
        "[resource link file:///data.csv (data.csv, text/csv, 99 bytes)]",
    ]
    assert png[:40] not in result_text(result)


def test_structured_content_stands_in_for_missing_content() -> None:
    result = types.CallToolResult(content=[], structured_content={"rows": 3, "ok": True})
    assert result_text(result) == '{"rows": 3, "ok": true}'


def test_empty_results_say_so() -> None:
    assert result_text(types.CallToolResult(content=[])) == "(no output)"
    assert result_text(types.CallToolResult(content=[], is_error=True)) == (
        "the tool reported an error without a message")
