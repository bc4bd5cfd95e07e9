"""MCP tools as nbagent Tools: the schema sent is the server's, names stay bare unless
they clash, arguments are checked against the schema, and an error result reaches the
model as an error (through the same `run_tool` path as every tool)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from nbagent.agent.mcp import definition, make_tool, tool_names, valid_name
from nbagent.agent.tools import OutputStore, run_tool

SCHEMA = {"type": "object", "title": "queryArguments",
          "properties": {"sql": {"type": "string", "title": "Sql"},
                         "limit": {"type": "integer", "default": 10}},
          "required": ["sql"]}


def remote(name: str = "query", schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(name=name, description="Run a  read-only\nSQL query.",
                      input_schema=schema if schema is not None else SCHEMA)


class Recorder:
    def __init__(self, answer: tuple[str, bool] = ("3 rows", False)) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        self.calls.append((server, tool, arguments))
        return self.answer


def test_the_schema_sent_is_the_servers_own_without_titles() -> None:
    made = make_tool("query", "db", definition(remote()), Recorder())
    assert made.schema == {"type": "function", "function": {
        "name": "query", "description": "Run a read-only SQL query.",
        "parameters": {"type": "object", "required": ["sql"], "properties": {
            "sql": {"type": "string"}, "limit": {"type": "integer", "default": 10}}}}}
    assert SCHEMA["title"] == "queryArguments"  # the server's listing is not altered


def test_a_call_goes_to_the_server_under_its_own_name_with_the_arguments() -> None:
    recorder = Recorder()
    made = make_tool("db__query", "db", definition(remote()), recorder)
    text, ok, _ = run_tool({made.name: made}, made.name, '{"sql": "select 1", "extra": [1]}',
                           call_id="c1", store=OutputStore(), default_cap=10_000)
    assert (text, ok) == ("3 rows", True)
    assert recorder.calls == [("db", "query", {"sql": "select 1", "extra": [1]})]


@pytest.mark.parametrize(("arguments", "expected"), [
    ('{"limit": 5}', "Error: invalid arguments for query: arguments: Value error, arguments: "
                     "'sql' is a required property"),
    ('{"sql": 7}', "sql: 7 is not of type 'string'"),
], ids=["missing", "wrong-type"])
def test_arguments_are_checked_against_the_schema_before_the_call(arguments: str,
                                                                  expected: str) -> None:
    recorder = Recorder()
    made = make_tool("query", "db", definition(remote()), recorder)
    text, ok, _ = run_tool({"query": made}, "query", arguments, call_id="c1",
                           store=OutputStore(), default_cap=10_000)
    assert expected in text and not ok and recorder.calls == []


def test_an_error_result_reaches_the_model_as_an_error() -> None:
    made = make_tool("query", "db", definition(remote()), Recorder(("table 'x' does not exist", True)))
    text, ok, _ = run_tool({"query": made}, "query", '{"sql": "select * from x"}',
                           call_id="c1", store=OutputStore(), default_cap=10_000)
    assert text == "Error: query raised McpToolError: table 'x' does not exist" and not ok


def test_long_results_are_capped_like_any_tools() -> None:
    made = make_tool("query", "db", definition(remote()), Recorder(("row\n" * 10_000, False)))
    store = OutputStore()
    text, ok, full = run_tool({"query": made}, "query", '{"sql": "s"}', call_id="c9",
                              store=store, default_cap=2_000)
    assert ok and full == 40_000 and len(text) < 3_000 and store.get("c9") == "row\n" * 10_000


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}},
    {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/s.json"}}},
    {"type": "object", "$defs": {"n": {"type": "integer"}}, "properties": {
        "x": {"$ref": "#/$defs/n"}, "y": {"$ref": "other.json#/n"}}},
], ids=["dangling", "remote", "one-of-two"])
def test_a_reference_that_cannot_be_resolved_leaves_checking_to_the_server(
        schema: dict[str, Any]) -> None:
    recorder = Recorder()
    offered = definition(remote("odd", schema))
    made = make_tool("odd", "s", offered, recorder)
    assert not made.checked and "unchecked" in offered.notes[0]
    sent = str(made.schema)
    assert "missing" not in sent and "example.invalid" not in sent and "other.json" not in sent
    assert ("#/$defs/n" in sent) == ("$defs" in schema)  # a reference that resolves stays
    text, ok, _ = run_tool({"odd": made}, "odd", '{"x": "not a number"}', call_id="c",
                           store=OutputStore(), default_cap=100)
    assert ok and recorder.calls == [("s", "odd", {"x": "not a number"})]


def test_a_failing_check_never_escapes_the_tool_runner() -> None:
    recorder = Recorder()
    offered = definition(remote("odd", {"type": "object"}))
    made = make_tool("odd", "s", offered, recorder)
    # a schema the validator cannot follow at call time (set past the listing's checks)
    made.arguments.input_schema = {"type": "object", "properties": {  # type: ignore[attr-defined]
        "x": {"$ref": "#/$defs/missing"}}}
    text, ok, _ = run_tool({"odd": made}, "odd", '{"x": 1}', call_id="c", store=OutputStore(),
                           default_cap=100)
    assert ok and recorder.calls == [("s", "odd", {"x": 1})]


def test_names_stay_bare_unless_two_servers_or_a_builtin_share_one() -> None:
    names = tool_names({"db": ["query", "tables"], "docs": ["search", "query"],
                        "files": ["read_file", "list"]}, reserved={"read_file", "recall"})
    assert names == {("db", "query"): "db__query", ("db", "tables"): "tables",
                     ("docs", "search"): "search", ("docs", "query"): "docs__query",
                     ("files", "read_file"): "files__read_file", ("files", "list"): "list"}


def test_names_are_valid_for_every_provider_and_never_two_alike() -> None:
    assert valid_name("git.log/show") == "git_log_show"
    assert valid_name("ü") == "tool" and len(valid_name("x" * 100)) == 64
    names = tool_names({"a": ["x.y", "x_y"], "b": ["x y"]})
    assert len(set(names.values())) == 3
    assert all(len(n) <= 64 and valid_name(n) == n for n in names.values())
    assert names == tool_names({"a": ["x.y", "x_y"], "b": ["x y"]})  # stable
