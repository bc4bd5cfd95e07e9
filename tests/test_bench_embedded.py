"""The embedded bench reads what it times correctly (its figures are the bench's job, so
only its reading is asserted here): the main job's printed outcome, the chat cell's outputs
by kind, and the parts it is asked to run."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

import pytest
from nbagent.widgets import plain_line, reply_bundle, status_bundle, tool_bundle

from nbagent.agent.models import STARTING
from nbagent.demo import QUESTIONS, run
from nbagent.events import ToolFinished

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
import embedded  # noqa: E402
import embedded_session  # noqa: E402


def test_the_main_jobs_outcome_is_read_from_what_it_printed() -> None:
    out = io.StringIO()
    decisions = run(offline=True, out=out)  # the same script, a stand-in model: instant
    outcome = embedded_session.demo_outcome(out.getvalue())
    by_trigger = {trigger: sum(d.trigger == trigger and d.action == "compacted"
                               for d in decisions)
                  for trigger in ("auto", "midloop", "manual", "overflow")}
    assert outcome["compactions"] == by_trigger and outcome["failures"] == 0
    assert outcome["answers"] == len(QUESTIONS) and outcome["stopped"] == 0


def test_a_main_job_that_printed_no_summary_reads_as_unknown() -> None:
    outcome = embedded_session.demo_outcome("agent: (stopped) the server died\n")
    assert outcome == {"answers": 1, "stopped": 1, "compactions": None, "failures": None}


def iopub(bundle: dict[str, Any], msg_type: str = "update_display_data") -> dict[str, Any]:
    return {"msg_type": msg_type, "content": {"data": bundle, "metadata": {}}}


@pytest.mark.parametrize(("message", "kind"), [
    (iopub(reply_bundle("The columns are region and revenue.")), "reply"),
    (iopub(reply_bundle("**bold** start"), "display_data"), "reply"),
    (iopub(tool_bundle(ToolFinished("c1", "list_variables", True, 49, 49, "sales"),
                       "list_variables", "{}")), "tool"),
    (iopub(status_bundle(STARTING.format(label="SmolLM2-135M", seconds=3))), "starting"),
    (iopub(status_bundle("thinking…"), "display_data"), "thinking"),
    (iopub(status_bundle("the local model is reading the prompt (316 tokens)…")), None),
    (iopub(plain_line("nbagent-note", "answered by SmolLM2-135M")), None),
    ({"msg_type": "stream", "content": {"name": "stdout", "text": "nbagent-reply"}}, None),
], ids=["reply", "first reply piece", "tool", "starting", "thinking", "reading", "note",
        "printed text"])
def test_the_chat_cells_outputs_are_told_apart(message: dict[str, Any], kind: str | None
                                               ) -> None:
    assert embedded_session.piece_kind(message) == kind


def test_the_parts_to_run_are_checked() -> None:
    assert embedded.parse_parts("load_ext, chat,load_ext") == ["load_ext", "chat"]
    for wrong in ("", "chats", "chat,main"):
        with pytest.raises(argparse.ArgumentTypeError):
            embedded.parse_parts(wrong)


def test_a_partial_run_reports_only_what_it_measured() -> None:
    session = {"runs": {"load_ext quiet": [{"reply": "It has region."}],
                        "load_ext busy": [{"reply": "x"}]},
               "median": {"load_ext quiet": {"load_s": 1.0, "reply_s": 12.0},
                          "load_ext busy": {"load_s": 1.5, "reply_s": 18.0}}}
    text = embedded.report({"cores": 2, "load_average": (0.5, 0.4, 0.3), "parts": ["load_ext"],
                            "repeats": 1, "session": session})
    assert "| `%load_ext` → first reply complete (s) | 12.0 | 18.0 | 1.50× |" in text
    assert "main job" not in text and "llama.cpp itself" not in text
    assert "the server was up before the chat asked" in text and '"It has region."' in text


def test_the_answers_bench_counts_real_columns_and_look_alikes() -> None:
    import embedded_answers

    columns = ["visit_count", "visitor_rating", "country"]
    text = "Use `visitor_rating` and country; visit_rating and reset_index are not columns."
    assert embedded_answers.columns_named(text, columns) == ["visitor_rating", "country"]
    assert embedded_answers.invented(text, {*columns, "visits"}) == ["visit_rating"]
    assert embedded_answers.columns_named("the visit_counts", columns) == []  # whole names
