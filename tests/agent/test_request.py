"""What a request carries beyond the history (`_request`): the notebook context joined to the
latest plain user message on the request's copy (never a tool result, never stored), and the
cache memory's plan — the previous request's breakpoint, the newest whose prefix still holds,
and the boundary a compaction has rewritten up to."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nbagent.agent import CacheMemory, with_context
from nbagent.testing import MEMORY_HEADER, ScriptedModel, calls, reply
from tests.helpers import add, make_agent


def test_for_a_model_of_ones_own_the_context_joins_the_latest_plain_user_message() -> None:
    asked = [{"role": "system", "content": "s"}, {"role": "user", "content": "why?"}]
    assert with_context(asked, "x: int = 1")[-1]["content"] == "[x: int = 1]\n\nwhy?"
    assert asked[-1]["content"] == "why?"  # a copy
    answered = [*asked, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"}]
    sent = with_context(answered, "x: int = 1")  # the tool result stays the tool's own
    assert sent[2:] == answered[2:] and sent[1]["content"] == "[x: int = 1]\n\nwhy?"
    memory = [*asked[:1], {"role": "user", "content": f"{MEMORY_HEADER}\n- notes"}]
    assert with_context(memory, "x") == memory  # a block nbagent wrote is not the user's
    assert with_context(asked, None) is asked


def test_a_model_of_ones_own_sees_the_context_on_the_users_message_and_tool_results_as_is(
        ) -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), reply("3")])
    agent, _ = make_agent(model, tools=[add], namespace={"rows": 10})
    agent.chat("add things")
    first, second = model.requests
    assert first[-1]["content"].endswith("]\n\nadd things") and "rows: int = 10" in str(
        first[-1]["content"])
    assert second[:len(first)] == first and second[-1]["content"] == "3"  # the tool's own
    assert all("rows: int" not in str(m.get("content")) for m in agent.history)


def test_the_previous_breakpoint_is_the_newest_one_whose_prefix_still_holds() -> None:
    agent, _ = make_agent(ScriptedModel([calls(("add", {"a": 1, "b": 2})), reply("3"),
                                         reply("b")]), tools=[add])
    session = agent.session
    assert CacheMemory.plan(session, [], enabled=True).previous is None
    agent.chat("one")  # requests ended at the user's message (1), then the tool result (3)
    plan = CacheMemory.plan(session, [], enabled=True)
    assert plan.previous == 3 and plan.stable == 5 and plan.key == f"nbagent-{session.id}"
    messages = session.history.messages  # a compaction rewrites the tool result (3)
    session.rewrite([*messages[:3], {**messages[3], "content": "[cleared]"}, messages[4]])
    assert CacheMemory.plan(session, [], enabled=True).previous == 1  # still cached
    session.rewrite([messages[0], {"role": "user", "content": "one, rewritten"}])
    assert CacheMemory.plan(session, [], enabled=True).previous == 0  # the system prompt


def test_after_a_snip_the_request_reads_up_to_where_the_last_compaction_ended() -> None:
    """The boundary is how far compaction has rewritten (here the last cleared result);
    the next snip starts after it, so the request after it still has that prefix cached
    and marks it, where it used to fall back to the system prompt."""
    from nbagent.testing import snip_placeholder

    agent, _ = make_agent(ScriptedModel())
    session = agent.session

    def turn(n: int, result: str) -> list[dict[str, Any]]:
        call = {"id": f"c{n}", "type": "function",
                "function": {"name": "peek", "arguments": "{}"}}
        return [{"role": "user", "content": f"ask {n}"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{n}", "content": result},
                {"role": "assistant", "content": f"answer {n}"}]

    long = "row,value\n" + "x,1\n" * 400
    history = [{"role": "system", "content": "s"}, *turn(1, snip_placeholder("c1")),
               *turn(2, long), *turn(3, long)]
    session.rewrite(history)
    plan = CacheMemory.plan(session, [], enabled=True)
    assert plan.boundary == 3  # the cleared result of turn 1
    snipped = [*history[:7], {**history[7], "content": snip_placeholder("c2")}, *history[8:]]
    session.rewrite(snipped)
    plan = CacheMemory.plan(session, [], enabled=True)
    assert plan.previous == 3 and plan.boundary == 7  # read through 3, then mark 7


def test_the_boundary_stops_short_of_a_live_note_the_next_snip_may_clear() -> None:
    """The latest note is never cleared, but once a newer one supersedes it the next snip
    clears it: a breakpoint past it would be rewritten by that snip."""
    from nbagent.engine.compaction import notebook_note
    from nbagent.testing import snip_placeholder

    agent, _ = make_agent(ScriptedModel())
    note = notebook_note([], "x: int = 1")
    assert note is not None
    call = {"id": "c1", "type": "function", "function": {"name": "peek", "arguments": "{}"}}
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "ask"}, note,
               {"role": "assistant", "content": None, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": "c1", "content": snip_placeholder("c1")},
               {"role": "assistant", "content": "done"}]
    agent.session.rewrite(history)
    assert CacheMemory.plan(agent.session, [], enabled=True).boundary == 1


def test_the_notebook_context_is_sent_but_never_stored() -> None:
    import pandas as pd

    frame = pd.DataFrame({"city": ["a"], "month": [1], "sales": [2.0], "visitors": [3]})
    model = ScriptedModel([reply("city, month, sales, visitors")])
    agent, _ = make_agent(model, namespace={"df": frame})
    agent.chat("what columns does df have?")
    sent = model.requests[0][-1]["content"]
    assert sent.endswith("]\n\nwhat columns does df have?") and "visitors" in sent
    assert agent.history[1] == {"role": "user", "content": "what columns does df have?"}


@given(st.lists(st.lists(st.integers(0, 40), max_size=30), min_size=1, max_size=6))
def test_the_cache_plans_digests_kept_between_requests_are_the_digests_of_the_history(
        requests: list[list[int]]) -> None:
    """Each request's prefix digests, taken in part from the last request's where its
    messages are the same objects, equal those of the history digested afresh: through
    appends, a rewrite of the middle (a compaction) and a shorter history."""
    from nbagent.agent._request import _chain

    class Session:
        pass

    session = Session()
    made: dict[int, dict[str, object]] = {}
    for request in requests:
        messages = [made.setdefault(n, {"role": "user", "content": f"message {n}"})
                    for n in request]
        assert _chain(messages, session) == _chain(messages)
