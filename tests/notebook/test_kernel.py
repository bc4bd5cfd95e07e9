"""The notebook outputs in a real python3 kernel (jupyter_client, ipykernel): a proposed
cell reaches the front end as the execute reply's `set_next_input` payload (a new cell
below, `replace` false, never run), and a chat cell's outputs are display_data bundles
with text/html and text/plain, the meter updated in place by its display id (no widget
model a reloaded page could miss)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from tests.notebook.helpers import SharedKernel, execute

pytestmark = pytest.mark.real
jupyter_client = pytest.importorskip("jupyter_client")

SETUP = textwrap.dedent("""
    import nbagent
    from nbagent.testing import ScriptedModel, reply
    ANSWER = "Here:\\n\\n```python\\nran_it = True\\nsales.groupby('region').revenue.sum()\\n```\\n"
    agent = nbagent.new_session(model=ScriptedModel(default=reply(ANSWER)),
                                settings=nbagent.Settings(max_context_tokens=8192))
    %load_ext nbagent
""")


def run(client: Any, code: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run `code` as nbclient runs a notebook (no cell named, no input box)."""
    return execute(client, code)



@pytest.fixture
def client(module_kernel: SharedKernel, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The module's kernel for one test, fresh (`SharedKernel`), SETUP run in it."""
    with module_kernel.turn(request) as (_, kernel):
        reply, messages = run(kernel, SETUP)
        assert reply["status"] == "ok", messages
        yield kernel


def test_chat_cell_code_becomes_the_next_input_payload(client: Any) -> None:
    reply, messages = run(client, "%%chat --cell\nrevenue by region")
    assert reply["status"] == "ok"
    (payload,) = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert payload["text"] == "ran_it = True\nsales.groupby('region').revenue.sum()"
    assert payload["replace"] is False
    _, checked = run(client, "print('ran_it' in dir())")  # the proposed code was never run
    assert [m["content"]["text"] for m in checked if m["msg_type"] == "stream"] == ["False\n"]
    texts = [str(m["content"].get("data", {}).get("text/plain", "")) for m in messages]
    assert any("proposed a new cell below" in text for text in texts)


def test_a_chat_cell_is_plain_rich_outputs_with_a_live_meter(client: Any) -> None:
    _, messages = run(client, "%%chat\nhello")
    shown = [m for m in messages if m["msg_type"] == "display_data"]
    assert shown and all("application/vnd.jupyter.widget-view+json" not in m["content"]["data"]
                         for m in shown)
    first = shown[0]["content"]
    assert "context left" in first["data"]["text/plain"] and "text/html" in first["data"]
    meter_id = first["transient"]["display_id"]
    updates = [m for m in messages if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == meter_id]
    assert updates  # the meter is redrawn in place while the chat runs
    kinds = {m["msg_type"] for m in messages}
    assert not kinds & {"comm_open", "error", "stream"}, kinds  # no widget, no stray text
