"""The built-in notebook tools (`nbagent.agent.tools._builtin`, one table), called as the
model calls them: over a namespace that holds real tables and arrays, and objects that are
lazy or broken; offered to a real agent turn, the opt-in `python` tool only when enabled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from nbagent import Settings
from nbagent.agent.tools import (
    BUILTIN_TOOLS,
    OutputStore,
    Tool,
    describe_builtin_tools,
    notebook_tools,
)
from nbagent.testing import ScriptedModel, calls, reply
from tests.agent.tools.helpers import TEXT, tools
from tests.helpers import make_agent, tool_results


class SlowLength:
    """Asking its length would run a five-second query."""

    def __init__(self) -> None:
        self.asked = 0

    def __len__(self) -> int:
        self.asked += 1
        import time

        time.sleep(5)
        return 1


class BrokenShape:
    @property
    def shape(self) -> tuple[int, ...]:
        raise OSError("the memory-mapped file was deleted")


def frame() -> pd.DataFrame:
    return pd.DataFrame({"region": ["n", "s", "n"], "revenue": [1.0, 2.5, None]})


def test_list_variables_shows_columns_and_dtypes() -> None:
    listing = tools({"sales": frame(), "n": 3, "arr": np.arange(6).reshape(2, 3)})["list_variables"]()
    assert listing == (
        f"sales: DataFrame shape (3, 2); columns: region ({TEXT}), revenue (float64)\n"
        "arr: ndarray (numpy) shape (2, 3) dtype int64\n"
        "n: int = 3"
    )


def test_list_variables_is_complete_when_objects_are_lazy_or_broken() -> None:
    slow = SlowLength()
    listing = tools({"slow": slow, "broken": BrokenShape(), "sales": frame()})["list_variables"]()
    assert slow.asked == 0
    assert listing.splitlines() == [
        f"sales: DataFrame shape (3, 2); columns: region ({TEXT}), revenue (float64)",
        "broken: BrokenShape (tests)",
        "slow: SlowLength (tests)",
    ]


def test_list_variables_with_nothing_to_show() -> None:
    assert tools({"np": np})["list_variables"]() == "(no variables)"


def test_describe_variable() -> None:
    found = tools({"sales": frame(), "slow": SlowLength()})
    described = found["describe_variable"](name="sales", rows=2)
    assert "revenue    float64" in described and "head(2):" in described and "mean" in described
    assert found["describe_variable"](name="nope") == (
        "No variable named 'nope'. Use list_variables to see what exists.")
    assert found["describe_variable"](name="slow").startswith("slow: SlowLength (tests)\nvalue:")


def test_describe_variable_bounds_rows_and_size() -> None:
    big = pd.DataFrame({"x": range(1_000), "y": ["text " * 20] * 1_000})
    described = tools({"big": big})["describe_variable"](name="big", rows=500)
    assert "head(50):" in described and len(described) < 4_200


def test_describe_variable_is_cut_where_the_setting_says(monkeypatch: pytest.MonkeyPatch) -> None:
    # 50 rows of 15 columns of floats and their statistics: about 5,000 characters
    big = {"big": pd.DataFrame(np.arange(15_000.0).reshape(1_000, 15) / 7)}
    assert len(tools(big)["describe_variable"](name="big", rows=50)) < 4_200
    chosen = tools(big, settings=lambda: Settings(describe_max_chars=12_000))
    assert 4_500 < len(chosen["describe_variable"](name="big", rows=50)) < 12_000
    monkeypatch.setenv("NBAGENT_DESCRIBE_MAX_CHARS", "1000")
    assert len(tools(big)["describe_variable"](name="big", rows=50)) < 1_200


def test_read_file_pages_by_lines_inside_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir(), elsewhere.mkdir()
    (work / "notes.txt").write_text("\n".join(f"line {i}" for i in range(30)))
    (elsewhere / "private.txt").write_text("not for the model")
    monkeypatch.chdir(work)
    read_file = tools({})["read_file"]
    page = read_file(path="notes.txt", offset=10, limit=5)
    assert page.startswith("[lines 10–15 of 30; next offset 15]\nline 10")
    refused = read_file(path=str(elsewhere / "private.txt"))
    assert refused.startswith("Refused:") and "NBAGENT_READ_ROOTS" in refused


def test_list_files_shows_what_read_file_may_read_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    (work / "data" / "raw").mkdir(parents=True), elsewhere.mkdir(), (work / ".git").mkdir()
    (work / "data" / "sales.csv").write_text("region,revenue\n" * 100)
    (work / "data" / ".env").write_text("OPENAI_API_KEY=sk-do-not-list\n")
    (work / "data" / "server.pem").write_text("key\n")
    (work / "data" / "outside").symlink_to(elsewhere)
    (work / "notes.txt").write_text("hello\n")
    monkeypatch.chdir(work)
    list_files = tools({})["list_files"]
    assert list_files() == ("- folder `.`: 1 readable file(s):\n  - `./notes.txt` (6 bytes)\n"
                            "  and 1 folder(s): `./data/`")
    assert list_files(path="data") == ("- folder `data`: 1 readable file(s):\n"
                                       "  - `data/sales.csv` (1.5 KB)\n"
                                       "  and 1 folder(s): `data/raw/`")
    assert list_files(path=str(elsewhere)).startswith("Refused:")
    assert list_files(path="notes.txt") == "notes.txt is not a folder: read_file reads a file."


def test_recall_reads_the_session_archive(tmp_path: Path) -> None:
    from nbagent.agent.archive import Archive

    with Archive("recall-test", tmp_path) as archive:
        archive.write("message", {"message": {"role": "user", "content": "drop the pilot rows"}},
                      sync=True)
        found = {t.name: t for t in notebook_tools({}, OutputStore(), archive=lambda: archive)}
        assert "#0 user: drop the pilot rows" in found["recall"](query="pilot")


def test_recall_without_an_archive_says_so() -> None:
    assert tools({})["recall"](query="revenue") == "No session archive to recall from."


def test_python_is_offered_only_when_enabled() -> None:
    assert "python" not in tools({})
    namespace: dict[str, Any] = {"x": 2}
    assert tools(namespace, enable_python=True)["python"](code="y = x * 21\nprint(y)") == "42\n"
    assert namespace["y"] == 42


# -- one table of plain functions over a small context -----------------------------------------


def test_the_builtin_tools_are_one_table_of_plain_functions() -> None:
    from nbagent.agent.tools import ToolContext

    assert {"list_variables", "describe_variable", "read_file", "read_output", "recall",
            "propose_cell", "run_code", "python"} <= set(BUILTIN_TOOLS)  # a new row needs no edit
    assert [n for n, row in BUILTIN_TOOLS.items() if row.opt_in] == ["run_code", "python"]
    assert [n for n, row in BUILTIN_TOOLS.items() if row.paging] == [
        "read_file", "read_output", "recall"]
    for name, row in BUILTIN_TOOLS.items():  # each one a top-level function of its name
        assert row.function.__qualname__ == name
    context = ToolContext({"n": 3})  # callable alone, with nothing but a context
    assert BUILTIN_TOOLS["list_variables"].function(context) == "n: int = 3"
    assert BUILTIN_TOOLS["describe_variable"].function(context, "n").startswith("n: int = 3")


def test_notebook_tools_offers_the_table_with_schemas_without_the_context() -> None:
    offered = notebook_tools({}, OutputStore())
    # the table's order, the opt-in `python` left out (its setting is off by default), and
    # the rows that need a session's door (delegating, asking for a compaction) too
    assert [t.name for t in offered] == [n for n, row in BUILTIN_TOOLS.items()
                                         if n != "python" and row.needs is None]
    doors = {"delegate": lambda task, briefing: "", "ask_compaction": lambda focus: ""}
    assert [t.name for t in notebook_tools({}, OutputStore(), **doors)] == [
        n for n in BUILTIN_TOOLS if n != "python"]
    schemas = {t.name: t.schema["function"] for t in offered}
    assert schemas["describe_variable"]["parameters"]["required"] == ["name"]
    assert "context" not in schemas["read_file"]["parameters"]["properties"]
    assert set(schemas["read_file"]["parameters"]["properties"]) == {
        "path", "offset", "limit", "start"}
    assert schemas["propose_cell"]["description"].startswith("Put code in a new notebook cell")
    assert [t.name for t in offered if t.paging] == ["read_file", "read_output", "recall"]


def test_a_new_builtin_tool_is_one_function_and_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    from nbagent.agent.tools import BuiltinTool, ToolContext

    def count_variables(context: ToolContext, prefix: str = "") -> str:
        """Count the user's variables.

        Args:
            prefix: count only names starting with this.
        """
        return str(sum(1 for name in context.namespace if name.startswith(prefix)))

    monkeypatch.setitem(BUILTIN_TOOLS, "count_variables", BuiltinTool(count_variables))
    found = tools({"sales": 1, "sales_2024": 2, "x": 3})
    assert found["count_variables"](prefix="sales") == "2"
    assert found["count_variables"].schema["function"]["parameters"]["properties"] == {
        "prefix": {"default": "", "description": "count only names starting with this.",
                   "type": "string"}}


# -- pages bounded whatever the limit asked --------------------------------------------------


def test_read_output_clamps_any_limit_to_one_page() -> None:
    store = OutputStore()
    store.put("call_9", "row\n" * 2_000_000)
    page = tools_over(store)["read_output"](ref="call_9", limit=10**9)
    header, _, body = page.partition("\n")
    assert header == "[characters 0–2,000 of 8,000,000; next offset 2000]"
    assert body.count("\n") == 500  # the line bound
    store.put("call_10", "\u00e9" * 100_000)
    wide = tools_over(store)["read_output"](ref="call_10", offset=10, limit=10**9)
    assert wide.startswith("[characters 10–16,010 of 100,000; next offset 16010]")
    store.put("call_11", "\U0001f600" * 100_000)
    emoji = tools_over(store)["read_output"](ref="call_11", limit=10**9)
    assert emoji.startswith("[characters 0–8,000 of 100,000; next offset 8000]")
    assert len(emoji.partition("\n")[2].encode()) == 32_000


def tools_over(store: OutputStore) -> dict[str, Tool]:
    return {t.name: t for t in notebook_tools({}, store)}


def test_recall_pages_are_bounded(tmp_path: Path) -> None:
    from nbagent.agent.archive import Archive
    from nbagent.agent.tools import PageBounds

    with Archive("recall-big", tmp_path) as archive:
        archive.write("message", {"message": {"role": "user", "content": "\U0001f600" * 3_000}},
                      sync=True)
        small = PageBounds(chars=1_000, bytes=2_000, lines=20)
        found = {t.name: t for t in notebook_tools({}, OutputStore(), archive=lambda: archive,
                                                   page=small)}
        page = found["recall"](message=0)
        body, _, note = page.rpartition("\n")
        assert len(body.encode()) <= 2_000 and body.startswith('{"role": "user"')
        prefix = len('{"role": "user", "content": "')  # ASCII; then 4-byte characters
        cut, total = prefix + (2_000 - prefix) // 4, prefix + 3_000 + 2
        assert note == (f"[page cut at {cut:,} of {total:,} characters (at most 1,000 characters, "
                        "2,000 bytes, 20 lines a page). Ask for fewer matches (limit) or page "
                        "on with offset.]")


# -- through a real agent turn -----------------------------------------------------------------


def test_builtin_notebook_tools(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    monkeypatch.chdir(tmp_path)  # the file tools read under the working directory
    frame = pd.DataFrame({"region": ["n", "s", "n"], "revenue": [1.0, 2.5, None]})
    path = tmp_path / "notes.txt"
    path.write_text("\n".join(f"line {i}" for i in range(30)))
    model = ScriptedModel(
        [
            calls(
                ("list_variables", {}),
                ("describe_variable", {"name": "sales"}),
                ("read_file", {"path": str(path), "offset": 10, "limit": 5}),
                ("python", {"code": "1"}),
            ),
            reply("done"),
        ]
    )
    agent, _ = make_agent(model, namespace={"sales": frame, "n": 3})
    agent.chat("look around")
    listing, described, page, python = tool_results(agent)
    assert listing == ("sales: DataFrame shape (3, 2); columns: region (str), revenue (float64)"
                       "\nn: int = 3")
    assert "revenue    float64" in described and "region" in described and "mean" in described
    assert page.startswith("[lines 10–15 of 30; next offset 15]\nline 10")
    assert python.startswith("Error: there is no tool named 'python'")  # off unless enabled


def test_the_python_tool_runs_in_the_namespace_when_enabled() -> None:
    namespace: dict[str, Any] = {"x": 2}
    model = ScriptedModel([calls(("python", {"code": "y = x * 21\nprint(y)"})), reply("42")])
    agent, _ = make_agent(model, namespace=namespace,
                          settings=Settings(enable_python=True))
    agent.chat("compute")
    assert tool_results(agent) == ["42\n"] and namespace["y"] == 42
    assert "python" in [t["function"]["name"] for t in model.tools_seen[0]]


def test_every_argument_of_a_built_in_tool_has_its_help_for_the_model_and_the_docs() -> None:
    # the model reads an argument's help in the schema (from the docstring's `Args:` line);
    # docs/tools.md's table prints the same line, so a new argument reaches both or fails here
    table = describe_builtin_tools()
    offered = tools({}, enable_python=True, delegate=lambda task, briefing: "",
                    ask_compaction=lambda focus: "")
    assert set(offered) == set(BUILTIN_TOOLS)
    for name, offer in offered.items():
        schema = offer.schema["function"]["parameters"]
        for argument, spec in schema.get("properties", {}).items():
            assert spec.get("description"), f"{name}({argument}) has no Args line"
            assert f"`{argument}`: {spec['description'].rstrip('.')}" in table
