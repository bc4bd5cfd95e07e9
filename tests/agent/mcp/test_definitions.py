"""What a server says about a tool, made fit to offer: hidden characters removed and
flagged, descriptions and schemas bounded, unusable schemas and unsupported tools left
out with their reason, its annotations (behaviour hints) kept as sent (`_definitions`; a
whole listing is `test_catalog`'s). Built from the SDK's own types: no server runs."""

from __future__ import annotations

import mcp_types as types
import pytest

from nbagent.agent.mcp import MAX_DESCRIPTION, definition, read_listing
from nbagent.text import strip_hidden
from tests.agent.mcp.helpers import tool


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


def hints(made: types.Tool) -> tuple[bool | None, ...]:
    kept = definition(made)
    return (kept.read_only_hint, kept.destructive_hint, kept.idempotent_hint,
            kept.open_world_hint)


@pytest.mark.parametrize(("annotations", "expected"), [
    (types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                           open_world_hint=False), (True, False, True, False)),
    (types.ToolAnnotations(destructive_hint=True, open_world_hint=True),
     (None, True, None, True)),
    (types.ToolAnnotations(title="Lookup"), (None, None, None, None)),
    (None, (None, None, None, None)),
], ids=["all-four", "some", "title-only", "none"])
def test_a_tools_annotations_are_kept_as_sent_and_none_where_absent(
        annotations: types.ToolAnnotations | None, expected: tuple[bool | None, ...]) -> None:
    assert hints(tool(annotations=annotations)) == expected


def test_hints_read_from_the_wire_by_their_camel_case_names() -> None:
    sent = types.Tool.model_validate({
        "name": "lookup", "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True, "destructiveHint": False}})
    assert hints(sent) == (True, False, None, None)


def test_annotations_change_nothing_else_but_a_changed_hint_is_a_changed_tool() -> None:
    plain, hinted = tool(), tool(annotations=types.ToolAnnotations(read_only_hint=True))
    offered = {made.name: made for made in read_listing("s", [plain]).offered}
    kept = read_listing("s", [hinted])
    assert kept.notes == [] and [d.name for d in kept.offered] == list(offered)
    made, before = kept.offered[0], offered["t"]
    assert (made.description, made.schema, made.checked, made.notes, made.skipped) == (
        before.description, before.schema, before.checked, before.notes, before.skipped)
    assert made.fingerprint != before.fingerprint  # a changed claim needs approval again
    denied = tool(annotations=types.ToolAnnotations(read_only_hint=False))
    assert definition(denied).fingerprint not in (made.fingerprint, before.fingerprint)
