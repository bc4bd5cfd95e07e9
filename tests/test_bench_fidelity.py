"""The fidelity bench's rounds that run code: the model's code really runs through the
`run_code` tool (the facts are what the data gives, not what the script says), and what
the runs produced is checked after every compaction, on the told path and on the paths
that learn the window (L4 first). The figures are the bench's job; only invariants here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
import fidelity  # noqa: E402
import fidelity_code  # noqa: E402


@pytest.fixture(scope="module")
def session() -> fidelity.Session:
    return fidelity.make_session(2, 60, code=True)


def test_the_code_rounds_ran_through_run_code_on_the_data(session: fidelity.Session) -> None:
    ran = [r for r in session.rounds if r.facts]
    assert [fact.kind for r in ran for fact in r.facts] == ["value", "column", "error"]
    for round_ in ran:  # the loop's own messages: run_code calls answered by real runs
        calls = [c for m in round_.messages for c in m.get("tool_calls") or ()]
        results = [m["content"] for m in round_.messages if m["role"] == "tool"]
        assert {c["function"]["name"] for c in calls} == {"run_code"}
        assert len(results) == len(calls) and all(r.startswith("[agent run ") for r in results)
    columns = fidelity.DOMAINS["churn"]  # seed 2's domain
    assert session.rounds[0].messages[0]["content"].startswith("Load data/raw/churn_")
    data = fidelity_code.frame(2, columns)
    value, column, error = (fact.needs for r in ran for fact in r.facts)
    assert value == (columns[2], str(round(float(data[columns[2]].mean()), 2)))
    category = columns[4]
    assert column == (f"{category}_{sorted(fidelity_code.CATEGORY_VALUES[category])[0]}",)
    assert column[0] not in json.dumps(ran[1].messages[:2])  # only the run's output names it
    assert error[0] == f"KeyError: 'Column not found: {columns[1][:-1]}'"  # pandas' own
    assert f"the mean {columns[2]} over merged is {value[1]}." in session.results


def test_without_code_a_session_is_four_messages_a_round() -> None:
    plain = fidelity.make_session(2, 60)
    assert all(len(r.messages) == 4 and not r.facts for r in plain.rounds)
    assert plain.code_facts == []


@pytest.mark.parametrize("path", list(fidelity.PATHS))
def test_the_code_outputs_stay_through_every_compaction(session: fidelity.Session,
                                                         path: str) -> None:
    run = fidelity.run_controller(session, fidelity.garbage, path=path)
    score = fidelity.score(session, run)
    assert score.compactions >= 2 and run.facts_checked > len(session.code_facts)
    assert score.code_kept == 1 and score.code_outputs == 1
    assert score.results == 1 and score.first_ask == 1 and score.latest_ask == 1


def test_a_code_fact_out_of_view_counts_as_lost(session: fidelity.Session) -> None:
    run = fidelity.run_controller(session, fidelity.garbage)
    value = session.code_facts[0]
    elsewhere = [{**m, "content": str(m.get("content") or "").replace(value.needs[1], "?")}
                 for m in run.final]
    lost = fidelity.score(session, fidelity.Run(final=elsewhere))
    assert lost.code_outputs == pytest.approx(2 / 3)
    assert not fidelity_code.visible(value, f"{value.needs[0]}\n{value.needs[1]}")  # one line


@pytest.mark.parametrize("path", list(fidelity.SERVER_PATHS))
def test_the_real_agent_sends_every_turn_against_each_misbehaving_server(
        session: fidelity.Session, path: str) -> None:
    """The bench's paths through the real agent (bench/fidelity_servers.py): a window told
    twice the server's is found out within two requests and never exceeded again; a server
    whose usage counts only its uncached tokens teaches no window; at 4,096 with pastes every
    turn is sent; what the session must keep is kept through every compaction."""
    run, served = fidelity.run_server(session, fidelity.garbage, path)
    score = fidelity.score(session, run)
    assert served.turns_sent == served.turns == len(session.rounds)
    assert len(served.cut) <= 2 and served.refused <= 2
    assert all(served.found_at is not None and r <= served.found_at + 1 for r in served.cut)
    assert score.first_ask == 1 and score.latest_ask == 1 and score.decisions == 1
    assert score.code_kept == 1 and score.results == 1 and score.compactions >= 2
    learned = served.window.endswith("(learned)")
    assert learned is (path == "told-above")
