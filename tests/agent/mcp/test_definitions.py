"""What a server says about a tool, made fit to offer: hidden characters removed and
flagged, descriptions and schemas bounded, unusable schemas and unsupported tools left
out with their reason, a server's share of the window kept, and what changed between two
listings."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from nbagent.agent.mcp._catalog import changes, read_listing
from nbagent.agent.mcp._definitions import (
    MAX_DESCRIPTION,
    MAX_SERVER,
    definition,
    fingerprint,
    strip_hidden,
)

OBJECT: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}


def tool(name: str = "t", description: str = "Does it.", schema: dict[str, Any] | None = None,
         **extra: Any) -> types.Tool:
    return types.Tool(name=name, description=description,
                      input_schema=schema if schema is not None else OBJECT, **extra)


@pytest.mark.parametrize("hidden", ["\u200b", "\u200e", "\u202e", "\u2066", "\ufeff", "\x1b[0m",
                                    "\x07", "\U000e0041", "\ufe0f", "\ue000", "\u3164"],
                         ids=["zwsp", "lrm", "rlo", "lri", "bom", "esc", "bel", "tag",
                              "variation", "private", "filler"])
def test_hidden_characters_are_removed_everywhere_and_flagged(hidden: str) -> None:
    made = definition(tool(f"re{hidden}ad", f"Reads{hidden} files.", {
        "type": "object", "properties": {f"pa{hidden}th": {"type": "string",
                                                           "description": f"a{hidden} path"}}}))
    assert made.name == "read" and made.description == "Reads files."
    assert made.schema["properties"] == {"path": {"type": "string", "description": "a path"}}
    assert made.notes == ("invisible or control characters were removed from its name, "
                          "description, schema",)
    assert made.remote_name == f"re{hidden}ad"  # calls use the server's own name


@pytest.mark.parametrize(("text", "expected"), [
    ("clear\x1b[2Jed", "cleared"), ("a\x1b]0;title\x07b", "ab"),
    ("a\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),
    ("a\x1bMb", "ab"), ("a\x9b31mb", "ab"),
], ids=["csi", "osc-title", "osc-hyperlink", "two-byte", "c1-csi"])
def test_terminal_escape_sequences_go_whole(text: str, expected: str) -> None:
    assert strip_hidden(text) == expected


def test_ordinary_text_is_left_alone() -> None:
    text = "Größe in €; naïve 日本語 — tabs\tand\nlines, emoji 🙂"
    assert strip_hidden(text) == text
    assert definition(tool(description=text)).notes == ()


def test_a_long_description_is_cut_and_said() -> None:
    made = definition(tool(description="word " * 2_000))
    assert len(made.description) == MAX_DESCRIPTION and made.description.endswith("…")
    assert made.notes == ("its description was cut from 9,999 to 2,000 characters",)


@pytest.mark.parametrize(("made", "reason"), [
    (tool(execution=types.ToolExecution(task_support="required")),
     "it needs task augmentation (execution.taskSupport 'required')"),
    (tool(schema={"type": "object", "properties": {"x": {"type": "objekt"}}}),
     "its input schema is not a valid JSON schema ("),
    (tool(schema={"type": "object", "properties": {f"f{n}": {"type": "string", "description":
                                                          "x" * 100} for n in range(200)}}),
     "its input schema takes 2"),
], ids=["tasks-required", "invalid-schema", "huge-schema"])
def test_tools_we_cannot_offer_are_left_out_with_their_reason(made: types.Tool,
                                                              reason: str) -> None:
    skipped = definition(made).skipped
    assert skipped is not None and skipped.startswith(reason)


def test_optional_task_support_is_offered() -> None:
    assert definition(tool(execution=types.ToolExecution(task_support="optional"))).skipped is None


def test_a_server_gets_a_bounded_share_of_every_request() -> None:
    many = [tool(f"t{n}", "d" * 1_900) for n in range(100)]
    listing = read_listing("big", many)
    assert 0 < len(listing.offered) < 100
    assert sum(d.size() for d in listing.offered) <= MAX_SERVER
    assert listing.left_out == 100 - len(listing.offered)
    assert listing.notes[-1].startswith(f"MCP server 'big': {listing.left_out} tool(s) not "
                                        "offered (t")


def test_two_names_alike_once_cleaned_keep_only_the_first() -> None:
    listing = read_listing("s", [tool("read"), tool("re\u200bad")])
    assert [d.remote_name for d in listing.offered] == ["read"]
    assert "another tool of the server has the same name" in listing.notes[-1]


def test_changes_between_two_listings() -> None:
    before = {"a": fingerprint(tool("a")), "b": fingerprint(tool("b"))}
    after = {"a": fingerprint(tool("a", "Now different.")), "c": fingerprint(tool("c"))}
    assert changes("s", before, after) == (
        "MCP server 's' changed its tools (new: 'c'; changed: 'a'; removed: 'b') — they need "
        "your approval again", ["c", "a"])
    assert changes("s", before, before) == (None, [])
    assert changes("s", before, {"a": before["a"]}) == (
        "MCP server 's' changed its tools (removed: 'b')", [])
