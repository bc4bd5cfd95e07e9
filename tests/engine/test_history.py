from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nbagent import History, HistoryError, validate_messages
from nbagent.engine import Span
from tests.strategies import histories

SYSTEM = {"role": "system", "content": "You are terse."}


def call(call_id: str, name: str = "describe", arguments: str = '{"name": "df"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def asks(*call_ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [call(i) for i in call_ids]}


def result(call_id: str, content: str = "shape (3, 2)") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


SESSION = [
    SYSTEM,
    user("load sales.csv"),
    asks("a", "b"),
    result("b"),
    result("a"),
    asks("c"),
    result("c"),
    reply("Loaded: 3 rows."),
    user("plot it"),
    reply("Done."),
]


def test_rounds_start_at_plain_user_messages() -> None:
    history = History(SESSION)
    assert history.rounds() == [Span(1, 8), Span(8, 10)]
    assert history.preamble == Span(0, 1)


def test_api_turns_end_after_each_reply_and_its_results() -> None:
    history = History(SESSION)
    assert history.api_turns() == [Span(1, 5), Span(5, 7), Span(7, 8), Span(8, 10)]


def test_results_may_answer_calls_in_any_order_and_pending_calls_are_listed() -> None:
    history = History([user("go"), asks("x", "y")])
    assert history.pending_tool_calls == ["x", "y"]
    with pytest.raises(HistoryError, match="'x', 'y'.*no result yet"):
        history.check_ready()
    history.append(result("y"))
    assert history.pending_tool_calls == ["x"]
    history.append(result("x"))
    history.check_ready()


BAD_MESSAGES = [
    pytest.param(
        [user("hi"), result("nope")],
        1,
        "does not follow an assistant tool call",
        id="orphan-result",
    ),
    pytest.param(
        [user("hi"), asks("a"), result("b")],
        2,
        "'b', which the assistant message at index 1 did not call",
        id="unknown-call-id",
    ),
    pytest.param(
        [user("hi"), asks("a"), result("a"), result("a")], 3, "answered twice", id="answered-twice"
    ),
    pytest.param(
        [user("hi"), asks("a"), user("again")],
        2,
        "'a' of the assistant message at index 1 must be answered",
        id="unanswered-call",
    ),
    pytest.param(
        [{"role": "robot", "content": "beep"}], 0, "unknown role 'robot'", id="unknown-role"
    ),
    pytest.param(
        [
            user("hi"),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("a", arguments="{not json")],
            },
        ],
        1,
        "arguments are not valid JSON",
        id="non-json-arguments",
    ),
    pytest.param(
        [{"role": "user", "content": 42}],
        0,
        "content must be a string or a list of content parts, got int",
        id="int-content",
    ),
    pytest.param(
        [{"role": "user", "content": [{"text": "no type"}]}],
        0,
        "content part 0",
        id="part-without-type",
    ),
    pytest.param(["just a string"], 0, "expected a dict, got str", id="not-a-dict"),
    pytest.param(
        [user("hi"), {"role": "assistant", "content": None}],
        1,
        "needs content or tool_calls",
        id="empty-assistant",
    ),
    pytest.param(
        [{"role": "tool", "content": "x"}],
        0,
        "needs a string 'tool_call_id'",
        id="result-without-id",
    ),
    pytest.param(
        [user("hi"), {"role": "assistant", "content": None, "tool_calls": [call("a"), call("a")]}],
        1,
        "appears twice",
        id="duplicate-call-id",
    ),
]


@pytest.mark.parametrize(("messages", "index", "problem"), BAD_MESSAGES)
def test_bad_input_names_the_message_and_the_problem(
    messages: list[Any], index: int, problem: str
) -> None:
    with pytest.raises(HistoryError, match=f"^message {index}: .*{problem}") as caught:
        validate_messages(messages)
    assert caught.value.index == index


@pytest.mark.parametrize(("messages", "index", "problem"), BAD_MESSAGES)
def test_a_failed_extend_leaves_the_history_unchanged(
    messages: list[Any], index: int, problem: str
) -> None:
    history = History([SYSTEM])
    before = (copy.deepcopy(history.messages), history.estimated_tokens, history.rounds())
    with pytest.raises(HistoryError) as caught:
        history.extend(messages)
    assert caught.value.index == index + 1  # counted from the start of the history
    assert (history.messages, history.estimated_tokens, history.rounds()) == before
    history.append(user("still works"))  # the pairing state was not corrupted
    assert len(history) == 2


def test_a_failed_replace_leaves_the_history_unchanged() -> None:
    history = History(SESSION)
    generation = history.generation
    with pytest.raises(HistoryError, match="message 1"):
        history.replace([SYSTEM, result("a")])
    assert history.messages == SESSION and history.generation == generation


def test_replace_bumps_the_generation_and_reuses_cached_estimates() -> None:
    history = History(SESSION)
    kept = history.messages[:1] + history.messages[8:]
    history.replace(kept)
    assert history.generation == 1
    assert history.estimated_tokens == sum(history.message_tokens(i) for i in range(len(kept)))
    assert history.rounds() == [Span(1, 3)]


def test_appended_messages_are_copied_so_later_edits_by_the_caller_do_not_leak_in() -> None:
    message = user("original")
    history = History([message])
    message["content"] = "edited"
    assert history[0]["content"] == "original"


def test_content_part_lists_and_empty_arguments_are_accepted() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    History(
        [
            {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]},
            {"role": "assistant", "content": None, "tool_calls": [call("a", arguments="")]},
            result("a"),
        ]
    )


@given(histories())
def test_generated_histories_are_valid_and_grouped_consistently(
    messages: list[dict[str, Any]],
) -> None:
    history = History(messages)
    assert history.messages == messages
    rounds = history.rounds()
    assert all(history[r.start]["role"] == "user" for r in rounds)
    assert sum(map(len, rounds)) == (len(messages) - rounds[0].start if rounds else 0)
    turns = history.api_turns()
    assert sum(map(len, turns)) == len(messages) - history.preamble.stop
    assert history.estimated_tokens == sum(history.message_tokens(i) for i in range(len(history)))


@given(histories(min_rounds=1))
def test_every_turn_boundary_is_a_safe_cut(messages: list[dict[str, Any]]) -> None:
    history = History(messages)
    preamble = messages[: history.preamble.stop]
    for turn in history.api_turns():
        validate_messages(preamble + messages[turn.start :])
        validate_messages(messages[: turn.stop])


@given(histories(min_rounds=1), st.data())
def test_removing_a_tool_result_is_always_caught(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    assume(results)  # (a history without tool results has none to remove)
    drop = data.draw(st.sampled_from(results))
    broken = messages[:drop] + messages[drop + 1 :]
    later = [m for m in broken[drop:] if m["role"] != "tool"]
    if later:
        with pytest.raises(HistoryError):
            validate_messages(broken)
    else:  # nothing follows: the call is simply still pending
        assert validate_messages(broken)


@given(histories(min_rounds=1), st.data())
def test_appending_one_by_one_equals_building_at_once(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    whole = History(messages)
    step = History()
    for message in messages:
        step.append(message)
    assert (step.rounds(), step.api_turns(), step.estimated_tokens) == (
        whole.rounds(),
        whole.api_turns(),
        whole.estimated_tokens,
    )


def test_call_ids_lists_every_tool_call_id_in_use() -> None:
    history = History(SESSION)
    assert history.call_ids() == {"a", "b", "c"}
    history.extend([user("more"), asks("d")])
    assert history.call_ids() == {"a", "b", "c", "d"}  # a pending call's id is in use too


def test_call_ids_follow_a_replace_and_a_failed_extend_adds_none() -> None:
    history = History(SESSION)
    with pytest.raises(HistoryError):
        history.extend([user("x"), asks("e"), user("unanswered")])
    assert "e" not in history.call_ids()
    history.replace([SYSTEM, user("plot it"), reply("Done.")])
    assert history.call_ids() == set()
    assert History().copy_with(SESSION[:4]).call_ids() == {"a", "b"}


@given(histories())
def test_call_ids_are_the_ids_of_every_assistant_tool_call(messages: list[dict[str, Any]]) -> None:
    expected = {call["id"] for m in messages for call in m.get("tool_calls") or ()}
    assert History(messages).call_ids() == expected


def test_it_knows_without_a_walk_whether_a_rounds_figures_are_in_it() -> None:
    """`has_images` (which spares a request to a model that reads no images a walk of the
    whole history) follows appends and rewrites, the cleared placeholder included."""
    from nbagent.engine import IMAGES_CLEARED, IMAGES_HEADER

    figures = {"role": "user", "content": [{"type": "text", "text": f"{IMAGES_HEADER} 1"},
                                          {"type": "image_url", "image_url": {"url": "x"}}]}
    history = History([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}])
    assert not history.has_images
    history.append({"role": "assistant", "content": "a figure"})
    history.append(figures)
    assert history.has_images
    history.replace([*history.messages[:3], {"role": "user", "content": IMAGES_CLEARED}])
    assert history.has_images  # its cleared text: still cleared for such a model
    history.replace(history.messages[:3])
    assert not history.has_images
