"""A delegated task (the `delegate` tool, `nbagent.agent._branch`) through real agent turns
(ScriptedModel drives both the main agent and its branch): only the bounded report enters
the main history; the branch has its own history, window and compaction, the same tools
but the session's doors, the same code policy; its transcript is in the session's archive
(recall finds it, resume keeps its record); its cost and tokens are the session's; a stop,
a failure, a hand-over and an interrupt each leave both histories valid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, Settings
from nbagent.agent.tools import code_runs
from nbagent.code import PlainRunner, use_code_runner
from nbagent.events import BranchFinished, BranchMessage, BranchProgress, BranchStarted
from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, read_records, reply
from nbagent.testing import recall as recall_in
from tests.helpers import nine_sections

LOG_LINES = 20_000


def big_log(folder: Path) -> Path:
    """A 600 KB log whose only errors are on every 1,000th line, one of them unique."""
    path = folder / "app.log"
    lines = [f"2026-12-01 10:{i % 60:02d} INFO request {i} served in {i % 97} ms"
             for i in range(LOG_LINES)]
    for i in range(0, LOG_LINES, 1_000):
        lines[i] = f"2026-12-01 10:00 ERROR disk full on /dev/sdb{i // 1_000}"
    lines[7_000] = "2026-12-01 10:00 ERROR quokka-7 checksum mismatch in shard 19"
    path.write_text("\n".join(lines) + "\n")
    return path


def agent_over(model: ScriptedModel, tmp_path: Path, **options: Any) -> Agent:
    settings = options.pop("settings", {})
    return Agent(model=model, namespace=options.pop("namespace", {}),
                 settings=Settings(**{"max_context_tokens": 64_000,
                                      "data_dir": str(tmp_path / "data"), **settings}),
                 summarize=options.pop("summarize", ScriptedSummarizer(default=nine_sections())),
                 **options)


@pytest.fixture
def in_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the file tools read the working directory
    big_log(tmp_path)
    return tmp_path


def delegated(report: str = "app.log: 20 ERROR lines; 19 say 'disk full', one 'quokka-7 "
              "checksum mismatch in shard 19' (line 7000).") -> list[Any]:
    """The main model delegates, the branch reads three pages and reports, the main model
    answers with the report's figure."""
    return [calls(("delegate", {"task": "How many ERROR lines does app.log have, and which "
                                        "kinds?", "data": ["app.log"]})),
            calls(("read_file", {"path": "app.log", "limit": 500})),
            calls(("read_file", {"path": "app.log", "offset": 6_900, "limit": 500})),
            calls(("read_file", {"path": "app.log", "offset": 19_500, "limit": 500})),
            reply(report),
            reply("app.log has 20 errors.")]


def contents(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages)


def test_only_the_report_enters_the_main_history(in_folder: Path) -> None:
    model = ScriptedModel(delegated())
    agent = agent_over(model, in_folder)
    result = agent.chat("How many errors are in app.log?")
    model.assert_consumed()
    assert result.text == "app.log has 20 errors."
    main = agent.history.messages
    (report,) = [m["content"] for m in main if m["role"] == "tool"]
    assert report.startswith("[delegated task 1 (done): 3 round(s), 3 tool call(s)")
    assert "quokka-7 checksum mismatch in shard 19" in report
    assert "request 6950 served" not in contents(main)  # the pages stayed in the branch
    branch_request = model.requests[4]  # the branch's last request held every page
    assert "request 6950 served" in contents(branch_request)
    assert branch_request[0]["content"].startswith("You work on one bounded task")
    assert branch_request[1]["content"].startswith("Task: How many ERROR lines")
    assert "file `app.log` (" in branch_request[1]["content"]
    # its own history: the main model's last request has no branch message in it
    assert all(m["role"] != "tool" or m["content"].startswith("[delegated task 1")
               for m in model.requests[5])
    (branch,) = agent.branches()
    assert (branch.number, branch.status, branch.rounds, branch.tool_calls) == (1, "done", 3, 3)
    assert branch.transcript_tokens > 10 * branch.returned_tokens
    assert branch.kept_out == branch.transcript_tokens - branch.returned_tokens
    assert agent.context_state().tokens < branch.transcript_tokens


def test_the_branch_has_the_tools_but_the_session_doors(in_folder: Path) -> None:
    model = ScriptedModel([calls(("delegate", {"task": "look"})),
                           calls(("delegate", {"task": "again"})),
                           reply("cannot delegate"), reply("ok")])
    agent = agent_over(model, in_folder, tools=[_shout])
    agent.chat("go")
    main_tools = {t["function"]["name"] for t in model.tools_seen[0]}
    branch_tools = {t["function"]["name"] for t in model.tools_seen[1]}
    assert {"delegate", "compact_context", "_shout", "read_file"} <= main_tools
    assert branch_tools == main_tools - {"delegate", "compact_context"}
    inside = model.requests[2][-1]["content"]  # the branch's own call to delegate
    assert inside.startswith("Error: there is no tool named 'delegate'")


def _shout(text: str) -> str:
    """Say it louder.

    Args:
        text: what to say.
    """
    return text.upper()


def test_a_cheaper_model_works_the_branch_and_the_cost_is_the_sessions(in_folder: Path) -> None:
    from nbagent import Usage

    main = ScriptedModel([calls(("delegate", {"task": "count the errors"})),
                          reply("20.", usage=Usage(input_tokens=3_000, output_tokens=4),
                                cost=0.010)], name="scripted/main")
    cheap = ScriptedModel([calls(("read_file", {"path": "app.log"})),
                           reply("20 errors", usage=Usage(input_tokens=9_000, output_tokens=6),
                                 cost=0.001)], name="scripted/cheap")
    agent = agent_over(main, in_folder, delegate_model=cheap)
    result = agent.chat("count")
    main.assert_consumed()
    cheap.assert_consumed()
    (branch,) = agent.branches()
    assert branch.model == "scripted/cheap" and branch.cost == pytest.approx(0.001)
    assert agent.cost == pytest.approx(0.011) and result.cost == pytest.approx(0.011)
    billing = agent.billing()
    assert billing.input_tokens == 12_000 and billing.output_tokens == 10
    assert billing.requests == 4
    assert branch.prompt_tokens == 9_000


def test_the_setting_names_the_branch_model(in_folder: Path) -> None:
    from nbagent.agent import branch_model

    agent = agent_over(ScriptedModel(), in_folder)
    assert branch_model(agent) is agent.model  # the chat model itself by default
    agent.configure(delegate_model="openai/gpt-4o-mini")
    assert branch_model(agent).name == "openai/gpt-4o-mini"


def test_the_transcript_is_archived_beside_the_session_and_recall_finds_it(
        in_folder: Path) -> None:
    model = ScriptedModel(delegated())
    agent = agent_over(model, in_folder)
    agent.chat("How many errors are in app.log?")
    path = agent.session.archive.path  # type: ignore[union-attr]
    records = list(read_records(path))
    transcript = [r["message"] for r in records if r["kind"] == "branch_message"]
    assert [m["role"] for m in transcript] == ["user", "assistant", "tool", "assistant", "tool",
                                               "assistant", "tool", "assistant"]
    assert "request 6950 served" in contents(transcript)
    found = recall_in(path, "request 6950 served")
    assert found.startswith("1 archived messages match")
    assert "\n#" in found and " tool (delegated task 1): [lines " in found
    (ended,) = [r for r in records if r["kind"] == "branch"]
    assert ended["status"] == "done" and ended["tool_calls"] == 3
    agent.close()
    resumed = Agent.resume(path, model=ScriptedModel([reply("still 20")]),
                           settings=Settings(data_dir=str(in_folder / "data")))
    try:
        (branch,) = resumed.branches()
        assert branch == agent.branches()[0]
        assert resumed.tools["recall"](query="request 6950 served").startswith(
            "1 archived messages match")
    finally:
        resumed.close()


def test_the_branch_compacts_its_own_history_not_the_main_one(in_folder: Path) -> None:
    pages = [calls(("read_file", {"path": "app.log", "offset": n * 400, "limit": 400}))
             for n in range(12)]
    model = ScriptedModel([calls(("delegate", {"task": "read it all"})), *pages,
                           reply("read 4,800 lines: 5 errors"), reply("5 errors so far")])
    agent = agent_over(model, in_folder, settings={"max_context_tokens": 16_000})
    agent.chat("read the log")
    model.assert_consumed()
    (branch,) = agent.branches()
    assert branch.compactions >= 1 and branch.transcript_tokens > 16_000
    assert agent.controller.decisions == type(agent.controller.decisions)()  # none here
    assert agent.context_state().percent_left > 50


def test_the_report_is_bounded_and_the_archive_keeps_it_whole(in_folder: Path) -> None:
    long_report = "finding " * 3_000
    model = ScriptedModel([calls(("delegate", {"task": "everything"})), reply(long_report),
                           reply("done")])
    agent = agent_over(model, in_folder, settings={"delegate_max_chars": 2_500})
    agent.chat("go")
    (report,) = [m["content"] for m in agent.history if m["role"] == "tool"]
    assert len(report) < 3_000 and "characters omitted" in report
    assert "recall finds the whole of it" in report
    path = agent.session.archive.path  # type: ignore[union-attr]
    kept = [r["message"]["content"] for r in read_records(path)
            if r["kind"] == "branch_message" and r["message"]["role"] == "assistant"]
    assert kept == [long_report]
    agent.close()


def test_a_branch_stopped_by_its_rounds_is_asked_for_its_report(in_folder: Path) -> None:
    model = ScriptedModel([calls(("delegate", {"task": "count"})),
                           calls(("read_file", {"path": "app.log"})),
                           calls(("read_file", {"path": "app.log", "offset": 200})),
                           reply("so far: 1 error in 400 lines"), reply("partial")])
    agent = agent_over(model, in_folder, settings={"max_tool_rounds": 2})
    agent.chat("count")
    model.assert_consumed()
    assert model.tool_choices[3] == "none"  # the report is asked for without tools
    assert model.requests[3][-1]["content"].startswith("Stop here (Stopped after 2 rounds")
    (branch,) = agent.branches()
    assert branch.status == "max_rounds" and "so far: 1 error" in branch.result


def test_a_failing_branch_model_returns_a_failure_and_the_chat_goes_on(in_folder: Path) -> None:
    from nbagent.testing import provider_error

    model = ScriptedModel([calls(("delegate", {"task": "count"})), provider_error(400, "bad"),
                           reply("it failed")])
    agent = agent_over(model, in_folder)
    assert agent.chat("count").text == "it failed"
    (report,) = [m["content"] for m in agent.history if m["role"] == "tool"]
    assert "The delegated task failed: The call to scripted/model failed" in report
    assert agent.branches()[0].status == "failed"


def test_an_interrupt_in_the_branch_leaves_both_histories_valid(in_folder: Path) -> None:
    def stop_here() -> str:
        """Stops."""
        raise KeyboardInterrupt

    model = ScriptedModel([calls(("delegate", {"task": "count"})), calls(("stop_here", {})),
                           reply("after")])
    agent = agent_over(model, in_folder, tools=[stop_here])
    with pytest.raises(KeyboardInterrupt):
        agent.chat("count")
    agent.history.check_ready()  # every call answered
    (answered,) = [m["content"] for m in agent.history if m["role"] == "tool"]
    assert answered.startswith("Interrupted")
    (branch,) = agent.branches()
    assert branch.status == "interrupted"
    path = agent.session.archive.path  # type: ignore[union-attr]
    transcript = [r["message"] for r in read_records(path) if r["kind"] == "branch_message"]
    assert transcript[-1]["role"] == "tool" and transcript[-1]["content"].startswith(
        "Interrupted")  # the branch's open call was answered too
    assert agent.chat("still there?").text == "after"
    agent.close()


def test_code_taken_as_a_cell_inside_the_branch_ends_the_main_turn(in_folder: Path) -> None:
    previous = use_code_runner(PlainRunner())
    try:
        model = ScriptedModel([calls(("delegate", {"task": "plot"})),
                               calls(("run_code", {"code": "x = 1"}))])
        agent = agent_over(model, in_folder)
        agent.approval.ask = lambda question: "c"  # the one question: take it as a cell
        result = agent.chat("plot it")
    finally:
        use_code_runner(previous)
    model.assert_consumed()  # neither model was asked again
    assert result.stop_reason == "handed_over"
    assert "x" not in agent.namespace
    assert agent.branches()[0].status == "handed_over"


def test_the_branchs_code_asks_and_is_numbered_as_the_sessions(in_folder: Path) -> None:
    class Answers(PlainRunner):
        asked: list[str] = []

        def ask(self, code: str, explanation: str, label: str, decide: Any) -> Any:
            self.asked.append(label)
            return decide("")  # the one question, answered by the agent's approval

    runner = Answers()
    previous = use_code_runner(runner)
    try:
        namespace: dict[str, Any] = {}
        model = ScriptedModel([calls(("run_code", {"code": "a = 1"})),
                               calls(("delegate", {"task": "set b"})),
                               calls(("run_code", {"code": "b = 2"})), reply("b is 2"),
                               reply("done")])
        agent = agent_over(model, in_folder, namespace=namespace,
                           settings={"run_code": "ask"})
        agent.approval.ask = lambda question: "y"
        agent.chat("set them")
    finally:
        use_code_runner(previous)
    assert runner.asked == ["agent run 1", "agent run 2"]  # one question per run, numbered on
    assert namespace["a"] == 1 and namespace["b"] == 2
    assert [ran.code for ran in code_runs(agent.events).done] == ["a = 1", "b = 2"]
    path = agent.session.archive.path  # type: ignore[union-attr]
    assert [r["code"] for r in read_records(path) if r["kind"] == "code_run"] == [
        "a = 1", "b = 2"]
    agent.close()


def test_the_session_stream_tells_the_branch_from_start_to_end(in_folder: Path) -> None:
    model = ScriptedModel(delegated())
    agent = agent_over(model, in_folder)
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    agent.chat("How many errors are in app.log?")
    ours = [e for e in seen if isinstance(e, BranchStarted | BranchProgress | BranchMessage
                                          | BranchFinished)]
    assert isinstance(ours[0], BranchStarted) and ours[0].task.startswith("How many ERROR")
    assert isinstance(ours[-1], BranchFinished) and ours[-1].branch.number == 1
    steps = [type(e.event).__name__ for e in ours if isinstance(e, BranchProgress)]
    assert steps.count("ToolStarted") == steps.count("ToolFinished") == 3
    agent.close()


def test_a_cut_output_of_the_branch_is_archived_under_its_name(in_folder: Path) -> None:
    def dump() -> str:
        """Dump everything."""
        return "".join(f"row {i}: value {i * 7}\n" for i in range(3_000))

    model = ScriptedModel([calls(("delegate", {"task": "dump"})), calls(("dump", {})),
                           calls(("read_output", {"ref": "call_2", "offset": 30_000})),
                           reply("row 2999 is 20993"), reply("done")])
    agent = agent_over(model, in_folder, tools=[dump])
    agent.chat("dump it")
    cut = model.requests[2][-1]["content"]  # what the branch saw: head, tail, a marker
    assert "characters omitted" in cut and 'read_output(ref="call_2"' in cut
    assert "row 1500: value 10500" in model.requests[3][-1]["content"]  # paged back inside
    path = agent.session.archive.path  # type: ignore[union-attr]
    (stored,) = [r for r in read_records(path) if r["kind"] == "output"]
    assert stored["ref"] == "branch1.call_2" and stored["text"] == dump()
    page = agent.tools["read_output"](ref="branch1.call_2", offset=30_000)
    assert "row 1500: value 10500" in page  # the main agent can read it back too
    agent.close()


def test_a_question_from_inside_a_branch_is_asked_where_the_interrupt_lands(
        in_folder: Path) -> None:
    """The branch's code asks through the thread that chats (the kernel's interrupt lands
    there only), not the branch's own thread, which is itself waited for."""
    import threading

    asked_on: list[int] = []

    def ask(question: str) -> str:
        asked_on.append(threading.get_ident())
        return "y"

    previous = use_code_runner(PlainRunner())
    try:
        namespace: dict[str, Any] = {}
        model = ScriptedModel([calls(("delegate", {"task": "set b"})),
                               calls(("run_code", {"code": "b = 2"})), reply("b is 2"),
                               reply("done")])
        agent = agent_over(model, in_folder, namespace=namespace,
                           settings={"run_code": "ask"})
        agent.approval.ask = ask
        agent.chat("set it")
    finally:
        use_code_runner(previous)
    assert namespace["b"] == 2
    assert asked_on == [threading.get_ident()]
    agent.close()


def test_a_branch_sends_its_tool_schemas_sized_to_its_window(in_folder: Path) -> None:
    """At a small window the branch's requests carry schemas within the same share of the
    window as the session's (lean, then some built-ins left out), never the full set."""
    from nbagent.engine import count_tools_tokens

    model = ScriptedModel(delegated())
    agent = agent_over(model, in_folder, settings={"max_context_tokens": 4_096})
    agent.chat("how many errors?")
    share = 0.15 * agent.context_state().thresholds.effective_window
    assert len(model.tools_seen) == 6  # the main model's two requests, the branch's four
    assert all(count_tools_tokens(schemas) <= share for schemas in model.tools_seen)
    agent.close()
