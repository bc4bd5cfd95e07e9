"""The one event stream: order, unsubscribe, failing subscribers; and what the
controller sends on it while it compacts."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from nbagent import CompactionController, History, Settings
from nbagent.events import (
    Compacted,
    CompactionStarted,
    Event,
    EventStream,
    Rewriting,
    Status,
)
from nbagent.providers import parse_token_limits
from nbagent.testing import ScriptedSummarizer
from tests.helpers import session

NOTES = "- notes about sales_df"


def controller(events: EventStream | None = None) -> CompactionController:
    return CompactionController(summarize=ScriptedSummarizer(default=NOTES), window="local/test",
                                settings=Settings(max_context_tokens=8_192), events=events)


def test_subscribers_are_told_in_the_order_they_subscribed() -> None:
    stream = EventStream()
    told: list[tuple[str, Event]] = []
    stream.subscribe(lambda e: told.append(("first", e)))
    stream.subscribe(lambda e: told.append(("second", e)))
    event = Status("thinking…")
    stream.emit(event)
    assert told == [("first", event), ("second", event)]


def test_subscribe_returns_the_subscriber_so_it_works_as_a_decorator() -> None:
    stream = EventStream()

    @stream.subscribe
    def show(event: Event) -> None: ...

    assert show in stream and stream.subscribers() == [show]


def test_an_unsubscribed_function_hears_nothing_more() -> None:
    stream = EventStream()
    told: list[Event] = []
    stream.subscribe(told.append)
    stream.emit(Status("one"))
    stream.unsubscribe(told.append)  # a new bound-method object, equal to the first
    stream.emit(Status("two"))
    assert told == [Status("one")] and told.append not in stream


def test_a_subscriber_may_unsubscribe_itself_while_being_told() -> None:
    stream = EventStream()
    told: list[str] = []

    def once(event: Event) -> None:
        told.append("once")
        stream.unsubscribe(once)

    stream.subscribe(once)
    stream.subscribe(lambda e: told.append("always"))
    stream.emit(Status("a"))
    stream.emit(Status("b"))
    assert told == ["once", "always", "always"]


def test_a_failing_subscriber_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    stream = EventStream()
    told: list[Event] = []

    def broken(event: Event) -> None:
        raise ValueError("the display is gone")

    stream.subscribe(broken)
    stream.subscribe(told.append)
    with caplog.at_level(logging.ERROR, logger="nbagent"):
        stream.emit(Status("still here"))
    assert told == [Status("still here")]
    assert "subscriber failed on Status" in caplog.text and "the display is gone" in caplog.text


def test_a_critical_subscriber_propagates_its_error() -> None:
    stream = EventStream()
    told: list[Event] = []

    def write_ahead(event: Event) -> None:
        raise OSError("disk full")

    stream.subscribe(write_ahead, critical=True)
    stream.subscribe(told.append)
    with pytest.raises(OSError, match="disk full"):
        stream.emit(Status("x"))
    assert told == []  # nothing after it was told


def test_the_controller_sends_started_rewriting_compacted_in_order() -> None:
    ctl = controller()
    told: list[Any] = []
    ctl.events.subscribe(told.append)
    history = History(session(12))
    decision = ctl.maybe_compact(history)
    steps = [e for e in told if not isinstance(e, Status)]  # progress lines between them
    assert [type(e) for e in steps] == [CompactionStarted, Rewriting, Compacted]
    started, rewriting, compacted = steps
    assert (started.trigger, started.tokens, started.threshold, started.focus) == (
        "auto", decision.tokens_before, 6_841, None)
    assert rewriting.messages == history.messages
    assert compacted.decision is decision


def test_rewriting_is_sent_before_the_history_changes() -> None:
    ctl = controller()
    history = History(session(12))
    original = history.messages
    seen: list[tuple[list[dict[str, Any]], int]] = []

    def write_ahead(event: Event) -> None:
        if isinstance(event, Rewriting):
            seen.append((history.messages, history.generation))

    ctl.events.subscribe(write_ahead, critical=True)
    ctl.maybe_compact(history)
    assert seen == [(original, 0)] and history.generation == 1


def test_a_failing_write_ahead_stops_the_rewrite() -> None:
    ctl = controller()
    history = History(session(12))
    original = history.messages

    def write_ahead(event: Event) -> None:
        if isinstance(event, Rewriting):
            raise OSError("disk full")

    ctl.events.subscribe(write_ahead, critical=True)
    with pytest.raises(OSError, match="disk full"):
        ctl.maybe_compact(history)
    assert history.messages == original and history.generation == 0


def test_a_compaction_that_changes_nothing_sends_no_rewriting() -> None:
    ctl = controller()
    told: list[Any] = []
    ctl.events.subscribe(told.append)
    ctl.handle_ptl_error(History(session(1)), parse_token_limits("prompt is too long"))
    steps = [e for e in told if not isinstance(e, Status)]
    assert [type(e) for e in steps] == [CompactionStarted, Compacted]
    assert steps[-1].decision.action == "failed" and told[-1] == Status("")


def test_under_the_trigger_nothing_is_sent() -> None:
    ctl = controller()
    told: list[Any] = []
    ctl.events.subscribe(told.append)
    ctl.maybe_compact(History(session(2)))
    ctl.on_tool_result(History(session(2)))
    assert told == []


def test_a_shared_stream_hears_the_controller() -> None:
    stream = EventStream()
    told: list[Any] = []
    stream.subscribe(told.append)
    ctl = controller(stream)
    assert ctl.events is stream
    ctl.compact_now(History(session(12)), focus="the column names")
    assert told[0] == CompactionStarted("manual", told[0].tokens, 6_841, "the column names")
