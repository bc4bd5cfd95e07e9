"""The notebook outputs in a real python3 kernel (jupyter_client, ipykernel): a proposed
cell reaches the front end as the execute reply's `set_next_input` payload (a new cell
below, `replace` false, never run), and a chat cell's outputs are display_data bundles
with text/html and text/plain, the meter updated in place by its display id (no widget
model a reloaded page could miss)."""

from __future__ import annotations

import os
import queue
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.real
jupyter_client = pytest.importorskip("jupyter_client")

WAIT_S = 120
SETUP = textwrap.dedent("""
    import nbagent
    from nbagent.testing import ScriptedModel, reply
    ANSWER = "Here:\\n\\n```python\\nran_it = True\\nsales.groupby('region').revenue.sum()\\n```\\n"
    agent = nbagent.new_session(model=ScriptedModel(default=reply(ANSWER)),
                                settings=nbagent.Settings(max_context_tokens=8192))
    %load_ext nbagent
""")


def run(client: Any, code: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run `code`: the execute reply's content and every iopub message of the cell."""
    msg_id = client.execute(code, allow_stdin=False)  # as nbclient runs a notebook
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT_S
    while True:
        assert time.monotonic() < deadline, f"the cell did not finish: {messages}"
        try:
            message = client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
        messages.append(message)
    while True:
        reply = client.get_shell_msg(timeout=WAIT_S)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"], messages


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    env = {**os.environ, "NBAGENT_DATA_DIR": str(tmp_path / "data"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    manager.start_kernel(env=env, cwd=str(tmp_path))
    kernel = manager.client()
    try:
        kernel.start_channels()
        kernel.wait_for_ready(timeout=WAIT_S)
        reply, messages = run(kernel, SETUP)
        assert reply["status"] == "ok", messages
        yield kernel
    finally:
        kernel.stop_channels()
        manager.shutdown_kernel(now=True)


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
