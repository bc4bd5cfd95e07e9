"""Chat outputs through a real shell, with no live kernel: `%context` and the meter show the
same figures (the cache's share too), a missing key is one line with the fix, a rerun cell
says it replaced its exchange, a cell's cost is said once, a notice wraps between words.
(The meter from a chat's first moment: test_run.py; the display's own lines: test_chat.py.)"""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import MeterLine

import nbagent
from nbagent import Agent, ChatResult
from nbagent.testing import ScriptedModel, provider_error, reply
from tests.notebook.helpers import plain, session, shown

WIDGET = "application/vnd.jupyter.widget-view+json"


    # (tests/notebook/test_record.py: the earlier one keeps the state of its own turn)


class BilledAgent(Agent):
    def billing(self) -> nbagent.Billing:  # what a provider's cache would have billed
        return nbagent.Billing(requests=1, input_tokens=380, cache_read_tokens=620,
                               input_cost=0.0123)


def test_context_and_the_meter_show_the_same_figures(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel(default=reply("a reply of some length " * 30)),
                    kind=BilledAgent)
    with capture_output():
        for turn in range(3):
            ip.run_line_magic("chat", f"question {turn} " * 30)
    with capture_output() as context:
        ip.run_line_magic("context", "")
    table = plain(context)[0]
    meter = MeterLine.follow(agent).reading
    assert meter is not None
    headline = re.search(r"\d+% context left", meter.text()).group(0)
    assert headline in table
    free = re.search(r"^free\s+([\d,]+)\s+(\d+)%$", table, re.MULTILINE)
    assert free is not None
    assert int(free.group(1).replace(",", "")) == meter.threshold - meter.tokens
    assert f"{free.group(2)}% context left" == headline  # one rounding, one base
    assert "62% of input read from cache" in table and "62% of input read from cache" in (
        meter.text())


def test_a_missing_key_is_one_line_with_the_fix(ip: InteractiveShell) -> None:
    raw = ("Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\n"
           "litellm.AuthenticationError: AuthenticationError: OpenAIException\n"
           "Received Model Group=openai/gpt-4o\nAvailable Model Group Fallbacks=None")
    session(ScriptedModel([provider_error(401, raw)], name="openai/gpt-4o"))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hi")
    (error,) = [d for d in shown(captured) if "nbagent-error" in d.get("text/html", "")]
    assert "\n" not in error["text/plain"] and "OPENAI_API_KEY" in error["text/plain"]
    assert "ProviderError" not in error["text/plain"] and "litellm" not in error["text/plain"]
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in str(captured.outputs)


class Kernel:
    """What `_cell_id` reads of ipykernel: the running request's cell id."""

    def get_parent(self) -> dict[str, Any]:
        return {"metadata": {"cellId": "cell-1"}}


@pytest.mark.skipif(not hasattr(ChatResult, "replaced"),
                    reason="ChatResult.replaced is not in this version of the library yet")
def test_a_rerun_cell_says_it_replaced_its_exchange(ip: InteractiveShell) -> None:
    session(ScriptedModel(default=reply("ok")))
    ip.kernel = Kernel()
    try:
        with capture_output() as first:
            ip.run_cell_magic("chat", "", "hello")
        with capture_output() as again:
            ip.run_cell_magic("chat", "", "hello")
    finally:
        del ip.kernel
    assert not any("replaced" in line for line in plain(first))
    assert any("earlier exchange was replaced" in line for line in plain(again))


def test_the_first_run_notice_wraps_between_words(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel(default=reply("hi")))
    agent.notice = "answers come from a very small model; agent.use_model('openai/gpt-4o')"
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hello")
    (notice,) = [d for d in shown(captured) if "small model" in d["text/plain"]]
    assert "word-break:normal" in notice["text/html"]  # HTML, not a <pre> that breaks words
    assert "%nbagent model=openai/gpt-4o" in notice["text/plain"]  # in notebook words


def test_the_sessions_cache_share_and_each_cells_cost_from_real_usage(
        ip: InteractiveShell) -> None:
    from nbagent import Usage

    used = Usage(input_tokens=200, output_tokens=20, cache_read_tokens=600)
    agent = session(ScriptedModel([reply("first", usage=used, cost=0.0031),
                                   reply("second", usage=used)]))
    if not callable(getattr(agent, "billing", None)):
        pytest.skip("Agent.billing is not in this library version yet")
    with capture_output() as paid:
        ip.run_line_magic("chat", "one")
    with capture_output() as unpaid:
        ip.run_line_magic("chat", "two")
    assert "this cell cost $0.0031" in plain(paid)
    assert not any("this cell cost" in line for line in plain(unpaid))
    with capture_output() as context:
        ip.run_line_magic("context", "")
    share = f"{round(100 * agent.billing().cache_read_share)}% of input read from cache"
    assert share in plain(context)[0] and share != "0% of input read from cache"
    assert share in str(MeterLine.follow(agent).reading)
