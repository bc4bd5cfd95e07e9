"""The last resort (`make_room`, the ladder's "L4 room"): an automatic compaction still over
its trigger folds all but the latest round into the floor, then, if that is not enough,
everything before that round — earlier blocks too — into one block of its floor sized to
the room left; it says when nothing more can be folded. And the controller runs it after
the rest, on the room the request has (issue 42: a message refused at turn 3)."""

from __future__ import annotations

from nbagent import CompactionController, History, Settings
from nbagent.compaction import LADDER
from nbagent.engine import count_message_tokens, is_memory
from nbagent.testing import ScriptedSummarizer, parse_floor
from tests.helpers import SYSTEM, session, tool_round

ROOM = next(rung.function for rung in LADDER if rung.name == "L4 room")


def size(messages: list[dict[str, object]]) -> int:
    return sum(count_message_tokens(m) for m in messages)


def test_it_acts_only_over_its_room_and_never_without_one() -> None:
    messages = session(6)
    assert not ROOM(messages, room=size(messages)).changed  # it fits
    assert not ROOM(messages, room=None).changed  # a compaction the user asked for


def test_all_but_the_latest_round_folds_into_the_floor() -> None:
    messages = session(8)
    latest = tool_round(8, question="Now plot col_8 by region.")
    messages += latest
    room = size(messages) // 2
    result = ROOM(messages, room=room, floor_tokens_budget=400)
    assert result.changed and not result.exhausted and size(result) <= room
    assert result[0] == SYSTEM and is_memory(result[1])
    assert list(result[2:]) == latest  # the latest round verbatim, its tool result whole
    floor = parse_floor(result[1]["content"])
    assert messages[1]["content"] in floor.user_messages  # the first request, kept by code


def test_earlier_blocks_fold_too_when_the_floor_alone_is_too_much() -> None:
    messages = session(12)
    first = ROOM(messages, room=size(messages) // 2, floor_tokens_budget=600)
    latest = [{"role": "user", "content": "and the trend of col_3? " + "rows " * 300}]
    grown = [*first, *latest]
    room = size([SYSTEM, *latest]) + 120  # a small block fits beside the big ask, no more
    result = ROOM(grown, room=room, floor_tokens_budget=600)
    assert result.changed and size(result) <= room
    assert [m for m in result if is_memory(m)] == [result[1]] and result[-1] == latest[0]
    assert "recall" in result[1]["content"]  # how to get back what was folded


def test_when_the_latest_round_alone_is_over_nothing_more_can_be_done() -> None:
    messages = [SYSTEM, *tool_round(0), {"role": "user", "content": "rows " * 2_000}]
    result = ROOM(messages, room=500)
    assert result.exhausted and size(result) > 500
    alone = ROOM([SYSTEM, {"role": "user", "content": "rows " * 2_000}], room=500)
    assert alone.exhausted and not alone.changed


def test_the_controller_makes_room_before_a_message_would_be_refused() -> None:
    """At 4,096, with long pastes, the session memory alone left the history over the
    trigger (and the blocking check refused the message)."""
    controller = CompactionController(
        summarize=ScriptedSummarizer(default="- the user pasted col_1 tables"),
        window="local/test", settings=Settings(max_context_tokens=4_096))
    history = History([SYSTEM])
    for t in range(3):
        history.append({"role": "user", "content": f"paste {t}: col_{t} " + "12.5 7.25 " * 300})
        history.append({"role": "assistant", "content": f"col_{t} looks fine."})
    history.append({"role": "user", "content": "and now? " + "3.5 1.25 " * 300})
    decision = controller.maybe_compact(history)
    limits = controller.thresholds()
    assert decision.action == "compacted" and decision.levels == ["L2 memory", "L4 room"]
    assert controller.count(history) < limits.auto_compact
    assert history[-1]["content"].startswith("and now? ")  # the latest ask, whole
