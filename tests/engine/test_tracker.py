from __future__ import annotations

from collections import Counter

from nbagent import History, Usage, estimate_message_tokens
from nbagent.engine import REPLY_PRIMING, TokenTracker, count_message_tokens, count_tools_tokens

MODEL = "openai/gpt-4o"
TOOLS = [{"type": "function", "function": {"name": "describe", "parameters": {"type": "object"}}}]


def conversation(turns: int) -> History:
    history = History([{"role": "system", "content": "You analyse data."}])
    for t in range(turns):
        history.append({"role": "user", "content": f"question {t} about the sales table"})
        history.append({"role": "assistant", "content": f"answer {t}: the mean is {t * 1.5}"})
    return history


class WordCounter:
    """An exact counter stand-in (one token per word) that records what it counted."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    def __call__(self, text: str) -> int:
        self.seen[text] += 1
        return len(text.split())


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
    history = conversation(30)
    sent = history.estimated_tokens + REPLY_PRIMING
    tracker = TokenTracker()
    tracker.record_usage(
        history, Usage(input_tokens=sent - 100, cache_read_tokens=100), model=MODEL
    )
    assert tracker.count(history, model=MODEL) == sent
    reply = {"role": "assistant", "content": "a fairly long answer " * 20}
    history.append(reply)
    ratio = tracker.ratio(MODEL)
    assert tracker.count(history, model=MODEL) == sent + round(
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


def test_a_usage_far_from_our_count_is_not_believed() -> None:
    """A client-side guess passed off as usage (or a server that dropped the tools) can
    be off by a factor of ten; it must neither anchor the count nor calibrate it."""
    history = conversation(30)
    tracker = TokenTracker()
    before = tracker.count(history, model=MODEL)
    tracker.record_usage(history, Usage(input_tokens=before // 12), model=MODEL)
    assert tracker.last_usage is None and tracker.ratio(MODEL) == 1.0
    assert tracker.count(history, model=MODEL) == before


def test_a_stale_usage_is_never_reused_after_the_history_is_rewritten() -> None:
    history = conversation(10)
    tracker = TokenTracker()
    sent = history.estimated_tokens + REPLY_PRIMING
    tracker.record_usage(history, Usage(input_tokens=sent + 40), model=MODEL)
    history.replace(history.messages[:1] + history.messages[-2:])
    count = tracker.count(history, model=MODEL)
    assert count < sent
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
    tracker.record_usage(history, Usage(input_tokens=70), model=MODEL, covered=covered)
    tail = history.message_tokens(len(history) - 2) + history.message_tokens(len(history) - 1)
    assert tracker.count(history, model=MODEL) == 70 + round(tracker.ratio(MODEL) * tail)


def test_zero_usage_is_ignored() -> None:
    history = conversation(2)
    tracker = TokenTracker()
    tracker.record_usage(history, Usage(), model=MODEL)
    assert tracker.count(history, model=MODEL) == history.estimated_tokens + REPLY_PRIMING


def test_usage_belongs_to_its_own_history_not_to_a_copy() -> None:
    history = conversation(3)
    sent = history.estimated_tokens + REPLY_PRIMING
    tracker = TokenTracker()
    tracker.record_usage(history, Usage(input_tokens=sent + 20), model=MODEL)
    tracker.record_usage(history, Usage(input_tokens=sent - 10), model=MODEL)  # the anchor
    copy = history.copy_with(history.messages)
    assert copy.generation == history.generation
    assert tracker.count(history, model=MODEL) == sent - 10
    assert tracker.count(copy, model=MODEL) == round(tracker.ratio(MODEL) * sent) != sent - 10


def test_an_exact_counter_counts_messages_tools_and_the_pending_turn() -> None:
    history = conversation(3)
    words = WordCounter()
    tracker = TokenTracker(count_text=words)
    pending = [{"role": "user", "content": "and now, the median?"}]
    expected = (
        sum(count_message_tokens(m, words) for m in history)
        + count_tools_tokens(TOOLS, words)
        + count_message_tokens(pending[0], words)
        + REPLY_PRIMING
    )
    assert tracker.count(history, model=MODEL, tools=TOOLS, pending=pending) == expected
    assert expected != history.estimated_tokens + REPLY_PRIMING  # not the estimator's sum
    assert tracker.history_tokens(history) == sum(count_message_tokens(m, words) for m in history)
    assert tracker.message_tokens(history, 1) == count_message_tokens(history[1], words)


def test_each_message_is_counted_once_across_appends_and_compactions() -> None:
    history = conversation(20)
    words = WordCounter()
    tracker = TokenTracker(count_text=words)
    for _ in range(3):
        tracker.count(history, model=MODEL)
    history.append({"role": "user", "content": "one more question"})
    tracker.count(history, model=MODEL)
    history.replace(
        [*history.messages[:1], {"role": "user", "content": "summary"}, *history.messages[-4:]]
    )
    tracker.count(history, model=MODEL)
    tracker.count(history.copy_with(history.messages), model=MODEL)
    assert max(words.seen.values()) == 1
    assert words.seen["summary"] == 1 and words.seen["one more question"] == 1


def test_real_usage_calibrates_exact_counts_too() -> None:
    history = conversation(30)
    tracker = TokenTracker(count_text=WordCounter())
    counted = tracker.count(history, model=MODEL)
    tracker.record_usage(history, Usage(input_tokens=counted + 60), model=MODEL)
    assert tracker.count(history, model=MODEL) == counted + 60
    assert tracker.ratio(MODEL) == (counted + 60) / counted
    history.append({"role": "assistant", "content": "ten words " * 5})
    added = count_message_tokens(history[-1], tracker.count_text or len)
    assert tracker.count(history, model=MODEL) == counted + 60 + round(tracker.ratio(MODEL) * added)


def test_a_history_that_counts_with_the_trackers_counter_is_not_counted_again() -> None:
    """The hook for a History built with `count_message=tracker.count_message`: its own
    cached counts are then exact, and the tracker uses them."""
    history = conversation(5)
    words = WordCounter()
    tracker = TokenTracker(count_text=words)
    history.count_message = tracker.count_message  # type: ignore[attr-defined]
    assert tracker.count(history, model=MODEL) == history.estimated_tokens + REPLY_PRIMING
    assert not words.seen
