"""What each chat line looks like (`widgets/_chat_lines.py`): a tool line with its
arguments and a preview cut on a word, a code block's copy button, the retry words (the
reason the agent's classifier found, never a guess from the error's words)."""

from __future__ import annotations

import re

import pytest
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatDisplay, reply_bundle, retry_words

from nbagent.events import Notice, Retrying, ToolFinished, ToolStarted
from tests.notebook.helpers import plain, shown

pytestmark = pytest.mark.usefixtures("shell")  # display() publishes through a shell


def test_tool_previews_are_cut_on_a_word_with_a_marker() -> None:
    view = ChatDisplay()
    preview = "city,month,sales\n" + "Oslo,1,3.5 " * 30 + "Lim"
    with capture_output() as captured:
        view(ToolStarted("c1", "read_file", '{"path": "sales.csv"}'))
        view(ToolFinished("c1", "read_file", True, 5_000, 90_000, preview))
    tool, status = shown(captured)
    assert status["text/plain"] == "thinking…"
    assert tool["text/plain"] == "read_file(path='sales.csv') → 5,000 chars (cut from 90,000)"
    assert "3.5… [cut]</pre>" in tool["text/html"] and "Lim" not in tool["text/html"]


@pytest.mark.parametrize("arguments", ["{}", "", "  "], ids=["braces", "empty", "blank"])
def test_a_tool_without_arguments_shows_none(arguments: str) -> None:
    view = ChatDisplay()
    with capture_output() as captured:
        view(ToolStarted("c1", "list_variables", arguments))
        view(ToolFinished("c1", "list_variables", True, 12, 12, "df: DataFrame"))
    tool_line = shown(captured)[0]
    assert tool_line["text/plain"] == "list_variables() → 12 chars"
    assert "<pre>df: DataFrame</pre>" in tool_line["text/html"]


def test_code_blocks_get_a_copy_button() -> None:
    reply = "Run this:\n\n```python\nprint(f\"${x}\")\n\nx = 1\n```\nthen\n```\nstill open"
    marked = reply_bundle(reply)["text/html"]
    (button,) = re.findall(r'<button class="nbagent-copy"[^\n]*</button>', marked)
    assert 'data-code="print(f&quot;&#36;{x}&quot;)&#10;&#10;x = 1"' in button
    assert marked.count("nbagent-copy") == 1  # only complete blocks
    assert "<pre><code>still open</code></pre>" in marked
    assert "nbagent-copy" not in reply_bundle("no code")["text/html"]


def test_retry_words() -> None:
    assert retry_words("Timeout: the read timed out", 0.2) == "retrying in 1 s (timed out)"
    assert retry_words("ConnectionResetError: peer reset", 2.6) == (
        "retrying in 3 s (ConnectionResetError: peer reset)")


def test_a_retry_line_says_the_events_reason_not_a_guess_from_the_text() -> None:
    """The words of a 503 may contain "rate" ("generate", "moderate"): the line says the
    reason the agent classified, shown by both displays."""
    error = "InternalServerError: failed to generate a response"
    assert retry_words(error, 2, "provider unavailable") == (
        "retrying in 2 s (provider unavailable)")
    for live in (True, False):
        view = ChatDisplay(live=live)
        with capture_output() as captured:
            view(Retrying(1, 2.4, error, "provider unavailable"))
        assert plain(captured)[-1] == "retrying in 2 s (provider unavailable)"


@pytest.mark.parametrize(("error", "words"), [
    ("InternalServerError: failed to generate a response",
     "InternalServerError: failed to generate a response"),
    ("ServiceUnavailableError: the server is under moderate load",
     "ServiceUnavailableError: the server is under moderate load"),
    ("RateLimitError: rate limit reached for requests", "rate limit"),
    ("APITimeoutError: Request timed out.", "timed out"),
], ids=["generate", "moderate", "rate-limit", "timeout"])
def test_a_retry_without_a_reason_is_classified_by_the_agents_rules(error: str,
                                                                   words: str) -> None:
    """An event from older code (no reason): the same classifier reads the text, and a
    text it cannot place is shown as it is, not called a rate limit for a word in it."""
    assert retry_words(error, 1) == f"retrying in 1 s ({words})"


@pytest.mark.parametrize(("error", "words"), [
    ('litellm.APIError: OpenAIException - {"error":{"code":"model_warming","message":'
     '"Model qwen2.5-7b is warming up, come back soon","type":"server_state"}}',
     "litellm.APIError: OpenAIException: Model qwen2.5-7b is… [cut]"),
    ('{"error":"Model mistralai/Mistral-7B-Instruct-v0.2 is warming up","estimated_time":20}',
     "Model mistralai/Mistral-7B-Instruct-v0.2 is warming up"),
    ('APIError: {"code": 17, "items": [1, 2]}\ntrace line', "APIError: code: 17, items: 1, 2"),
], ids=["litellm-wrapped", "hugging-face-like", "no-message"])
def test_a_json_error_without_a_reason_is_shown_cut_and_readable(error: str, words: str) -> None:
    line = retry_words(error, 1)
    assert line == f"retrying in 1 s ({words})"
    assert not any(mark in line for mark in '{}"')  # no JSON punctuation ("[cut]" is ours)



def test_a_notice_is_a_line_kept_in_the_cell_at_once_in_both_displays() -> None:
    """A tool server's line (it restarted, changed its tools) stays under the chat when it
    happens; a status line is replaced by the next one."""
    change = ("MCP server 'h' changed its tools (changed: 'ok') — they need your approval "
              "again <b>x</b>")
    for live in (True, False):
        view = ChatDisplay(live=live)
        with capture_output() as captured:
            view(ToolStarted("c1", "change", "{}"))
            view(Notice(change))
            view(ToolFinished("c1", "change", True, 10, 10, "change: []"))
        lines = plain(captured)
        assert change in lines and lines.index(change) < len(lines) - 1
        if live:
            html = [b.get("text/html", "") for b in shown(captured)]
            assert not any("<b>x</b>" in h for h in html)  # the server's words, inert
            assert any("&lt;b&gt;x&lt;/b&gt;" in h for h in html)
