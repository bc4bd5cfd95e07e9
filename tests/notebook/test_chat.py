"""The chat display (`widgets/_chat.py`) over a chat's time: the reply redrawn steadily
while it streams and started again after a broken stream, one status line following the
agent, and the lines under a reply (cut, stopped, replaced, its cost)."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatDisplay

from nbagent import ChatResult
from nbagent.events import (
    Compacted,
    CompactionStarted,
    Notice,
    Retrying,
    Status,
    ToolFinished,
    ToolStarted,
)
from tests.notebook.helpers import decision, plain, shown

pytestmark = pytest.mark.usefixtures("shell")  # display() publishes through a shell


def test_the_reply_is_redrawn_steadily_while_it_streams() -> None:
    now = [0.0]
    view = ChatDisplay(clock=lambda: now[0])
    with capture_output() as captured:
        for _ in range(150):  # a token every 20 ms for 3 s
            view.on_text("word ")
            now[0] += 0.02
        view.finish(ChatResult(text="word " * 150))
    draws = [o for o in captured.outputs if "nbagent-reply" in o.data.get("text/html", "")]
    assert 28 <= len(draws) <= 33  # about every 100 ms, not once at the end
    assert draws[0].data["text/plain"] == "word "  # the first word at once
    assert shown(captured)[-1]["text/plain"] == "word " * 150


def test_a_reply_slow_to_render_is_redrawn_less_often(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    render = ChatDisplay.__module__ + ".reply_bundle"
    rendered = __import__(ChatDisplay.__module__, fromlist=["reply_bundle"]).reply_bundle

    def draws(render_s: float) -> int:
        def slow(text: str) -> Any:  # a render that takes `render_s` on the display's clock
            now[0] += render_s
            return rendered(text)

        monkeypatch.setattr(render, slow)
        view = ChatDisplay(clock=lambda: now[0])
        with capture_output() as captured:
            for _ in range(150):  # a token every 20 ms
                view.on_text("word ")
                now[0] += 0.02
            view.finish(ChatResult(text="word " * 150))
        return sum("nbagent-reply" in o.data.get("text/html", "") for o in captured.outputs)

    # every 100 ms while a render is quick; ten times the last render's time while it is not
    assert draws(0.0) > 3 * draws(0.05)


def test_one_status_line_follows_the_agent() -> None:
    view = ChatDisplay(clock=lambda: 0.0)
    with capture_output() as captured:
        view.status("starting the local model…")
        assert plain(captured) == ["starting the local model…"]
        view(Status("thinking…"))
        assert plain(captured) == ["thinking…"]
        view(ToolStarted("c1", "describe_variable", '{"name": "df"}'))
        assert plain(captured) == ["running describe_variable(name='df')…"]
        view(ToolFinished("c1", "describe_variable", True, 120, 120, "df: DataFrame"))
        assert plain(captured) == ["describe_variable(name='df') → 120 chars", "thinking…"]
        view(CompactionStarted("midloop", 6_000, 5_800, None))
        assert plain(captured)[-1] == "compacting…"
        view(Compacted(decision()))
        assert plain(captured)[1:] == [
            "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call"]
        view(Retrying(attempt=1, wait_s=4.2, error="RateLimitError: 429 Too Many Requests"))
        assert plain(captured)[-1] == "retrying in 4 s (rate limit)"
        view.on_text("The answer")
        view.finish(ChatResult(text="The answer"))
    assert plain(captured) == [
        "describe_variable(name='df') → 120 chars",
        "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call",
        "The answer",
    ]


def test_a_broken_stream_starts_its_text_again() -> None:
    view = ChatDisplay(clock=lambda: 0.0)
    with capture_output() as captured:
        view.on_text("half an ans")
        view(Retrying(attempt=1, wait_s=1, error="503 Service Unavailable"))
        assert plain(captured) == ["retrying in 1 s (provider unavailable)"]
        view.on_text("the whole answer")
        view.finish(ChatResult(text="the whole answer"))
    assert plain(captured) == ["the whole answer"]


def test_a_cut_reply_says_so_and_how_to_go_on() -> None:
    result = ChatResult(text="The three steps are: first, load")
    result.truncated = True  # type: ignore[attr-defined]
    view = ChatDisplay()
    with capture_output() as captured:
        view.on_text(result.text)
        view.finish(result)
    assert plain(captured) == [
        "The three steps are: first, load",
        "⋯ the reply was cut at the model's output limit — send `%chat continue` for the rest",
    ]
    assert "<code>%chat continue</code>" in shown(captured)[-1]["text/html"]


def test_a_reply_without_streaming_and_a_stop_message() -> None:
    with capture_output() as captured:
        ChatDisplay().finish(ChatResult(text="42", stop_message="Stopped after 3 rounds."))
    assert plain(captured) == ["42", "Stopped after 3 rounds."]


def test_a_replaced_exchange_and_a_cost_are_said_in_one_line_each() -> None:
    result = ChatResult(text="42", cost=0.0042)
    result.replaced = True  # type: ignore[attr-defined]  # set by the loop when it replaced
    with capture_output() as captured:
        ChatDisplay().finish(result)
        ChatDisplay().finish(ChatResult(text="free"))
    assert plain(captured) == [
        "42",
        "this cell's earlier exchange was replaced by this one (the earlier one stays in "
        "the archive)",
        "this cell cost $0.0042",
        "free",
    ]


def _events_named(method: Any) -> set[str]:
    """The event classes `method` dispatches on (`isinstance(event, X)`)."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    return {node.args[1].id for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "isinstance" and isinstance(node.args[1], ast.Name)}


# A sample of every event the chat display shows, for the check below (a new branch of
# `ChatDisplay.__call__` without a sample fails it)
EVENT_SAMPLES: dict[str, list[object]] = {
    "Status": [Status("thinking…")],
    "Notice": [Notice("MCP server 'files' restarted")],
    "Retrying": [Retrying(2, 1.5, "rate limited", "rate limit")],
    "CompactionStarted": [CompactionStarted("auto", 9_000, 8_000, None)],
    "Compacted": [Compacted(decision())],
    "ToolStarted": [ToolStarted("c1", "add", '{"a": 1}')],
    "ToolFinished": [ToolStarted("c1", "add", '{"a": 1}'),
                     ToolFinished("c1", "add", True, 1, 1, "2")],
}


@pytest.mark.parametrize("kind", sorted(_events_named(ChatDisplay.__call__)), ids=str)
def test_an_event_the_notebook_keeps_a_line_for_is_printed_in_a_terminal_too(
        kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`TerminalChat` (jupyter console, terminal IPython) prints its own way only what it
    must (streamed text, tool lines); any other event goes through the notebook's branch, so
    a line added there for a new event (docs/architecture.md, recipe 16) reaches both."""
    assert kind in EVENT_SAMPLES, f"give {kind} a sample in EVENT_SAMPLES"
    with capture_output() as notebook:
        view = ChatDisplay(live=True)
        for event in EVENT_SAMPLES[kind]:
            view(event)
    kept = [o for o in notebook.outputs if "nbagent-status" not in o.data.get("text/html", "")
            and o.data.get("text/plain")]
    capsys.readouterr()
    with capture_output() as terminal:
        view = ChatDisplay(live=False)
        for event in EVENT_SAMPLES[kind]:
            view(event)
    printed = [o for o in terminal.outputs if o.data.get("text/plain")] or terminal.stdout
    assert printed or not kept, (kind, kept)  # (a terminal prints a retry the cell shows
    # only as its status line: it has no status line)
