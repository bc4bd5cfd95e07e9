from __future__ import annotations

from nbagent import History, TokenTracker, Usage, estimate_message_tokens
from nbagent._tokens import REPLY_PRIMING

MODEL = "openai/gpt-4o"
TOOLS = [{"type": "function", "function": {"name": "describe", "parameters": {"type": "object"}}}]


def conversation(turns: int) -> History:
    history = History([{"role": "system", "content": "You analyse data."}])
    for t in range(turns):
        history.append({"role": "user", "content": f"question {t} about the sales table"})
        history.append({"role": "assistant", "content": f"answer {t}: the mean is {t * 1.5}"})
    return history


def test_without_usage_the_count_is_the_estimate_of_everything_sent() -> None:
    history = conversation(3)
    tracker = TokenTracker()
    pending = [{"role": "user", "content": "and now?"}]
    bare = tracker.count(history, model=MODEL)
    assert bare == history.estimated_tokens + REPLY_PRIMING
    with_tools = tracker.count(history, model=MODEL, tools=TOOLS)
    assert with_tools > bare
    assert tracker.count(history, model=MODEL, pending=pending) == bare + estimate_message_tokens(
        pending[0]
    )


def test_real_usage_anchors_the_count_and_appended_messages_are_estimated() -> None:
    history = conversation(3)
    tracker = TokenTracker()
    tracker.record_usage(history, Usage(input_tokens=400, cache_read_tokens=600), model=MODEL)
    assert tracker.count(history, model=MODEL) == 1_000
    reply = {"role": "assistant", "content": "a fairly long answer " * 20}
    history.append(reply)
    ratio = tracker.ratio(MODEL)
    assert tracker.count(history, model=MODEL) == 1_000 + round(
        ratio * estimate_message_tokens(reply)
    )


def test_usage_recalibrates_the_ratio_for_that_model_only() -> None:
    history = conversation(10)
    tracker = TokenTracker()
    sent = history.estimated_tokens + REPLY_PRIMING
    tracker.record_usage(history, Usage(input_tokens=2 * sent), model=MODEL)
    assert tracker.ratio(MODEL) == 2.0
    assert tracker.ratio("other-model") == 1.0
    tracker.record_usage(history, Usage(input_tokens=sent), model=MODEL)
    assert tracker.ratio(MODEL) == 1.5  # smoothed, not jumping to each new reading


def test_a_stale_usage_is_never_reused_after_the_history_is_rewritten() -> None:
    history = conversation(10)
    tracker = TokenTracker()
    tracker.record_usage(history, Usage(input_tokens=50_000), model=MODEL)
    history.replace(history.messages[:1] + history.messages[-2:])
    count = tracker.count(history, model=MODEL)
    assert count < 50_000
    assert count == round(tracker.ratio(MODEL) * (history.estimated_tokens + REPLY_PRIMING))


def test_usage_of_another_model_is_not_reused() -> None:
    history = conversation(2)
    tracker = TokenTracker()
    tracker.record_usage(history, Usage(input_tokens=9_999), model="a")
    assert tracker.count(history, model="b") != 9_999


def test_usage_can_cover_fewer_messages_than_the_history_holds() -> None:
    history = conversation(4)
    covered = len(history) - 2
    tracker = TokenTracker()
    tracker.record_usage(history, Usage(input_tokens=700), model=MODEL, covered=covered)
    tail = history.message_tokens(len(history) - 2) + history.message_tokens(len(history) - 1)
    assert tracker.count(history, model=MODEL) == 700 + round(tracker.ratio(MODEL) * tail)


def test_zero_usage_is_ignored() -> None:
    history = conversation(2)
    tracker = TokenTracker()
    tracker.record_usage(history, Usage(), model=MODEL)
    assert tracker.count(history, model=MODEL) == history.estimated_tokens + REPLY_PRIMING


def test_usage_belongs_to_its_own_history_not_to_a_copy() -> None:
    history = conversation(3)
    tracker = TokenTracker()
    tracker.record_usage(history, Usage(input_tokens=5_000), model=MODEL)
    copy = history.copy_with(history.messages)
    assert copy.generation == history.generation
    assert tracker.count(history, model=MODEL) == 5_000
    assert tracker.count(copy, model=MODEL) != 5_000
