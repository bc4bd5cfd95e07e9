"""The cells the user ran survive a chat cell that fails and is run again, in a real python3
kernel (jupyter_client, ipykernel; cells named as JupyterLab names them): re-running the
chat cell replaces its exchange, message and all, so the cells its failed message carried
ride again in the new one — once — and again when a chat cell that worked is re-run."""

from __future__ import annotations

import ast
import json
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from tests.notebook.helpers import KERNEL_WAIT_S, SharedKernel, execute

pytestmark = pytest.mark.real
jupyter_client = pytest.importorskip("jupyter_client")

NOTE = "the cells the user ran since your last turn"
SETUP = textwrap.dedent("""\
    import json, nbagent
    from nbagent.testing import ScriptedModel, provider_error, reply
    model = ScriptedModel([provider_error(400, "Invalid request: unsupported parameter"),
                           reply("It is 42."), reply("Still 42.")])
    agent = nbagent.new_session(model=model, settings=nbagent.Settings(
        max_context_tokens=32_000))
    %load_ext nbagent
""")



@pytest.fixture
def client(module_kernel: SharedKernel, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The module's kernel for one test, fresh (`SharedKernel`): no cells run in it yet."""
    with module_kernel.turn(request) as (_, running):
        yield running


def run(client: Any, code: str, cell_id: str) -> list[dict[str, Any]]:
    reply, messages = execute(client, code, cell_id=cell_id)
    assert reply["status"] == "ok", messages
    return messages


def value(client: Any, expression: str) -> Any:
    """A JSON value computed in the kernel, read silently: a silent request runs no cell
    the user would have run (no pre/post_run_cell), so it never joins the note itself."""
    msg_id = client.execute("", silent=True, user_expressions={"v": f"json.dumps({expression})"})
    while True:
        reply = client.get_shell_msg(timeout=KERNEL_WAIT_S)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    result = reply["content"]["user_expressions"]["v"]
    assert result["status"] == "ok", result
    return json.loads(ast.literal_eval(result["data"]["text/plain"]))


def test_a_failed_chat_cell_run_again_still_sends_the_cells(client: Any) -> None:
    run(client, SETUP, "cell-setup")
    run(client, "answer = 40 + 2\nprint('the answer is', answer)", "cell-a")
    failed = run(client, "%%chat\nwhat did I get?", "cell-b")
    assert "unsupported parameter" in json.dumps([m["content"] for m in failed])
    run(client, "%%chat\nwhat did I get?", "cell-b")  # "run the cell again to retry"
    request = value(client, "model.requests[-1]")
    sent = "\n".join(str(m["content"] or "") for m in request)
    assert sent.count(NOTE) == 1 and "the answer is 42" in sent and "answer = 40 + 2" in sent
    asked = [m for m in request if m["role"] == "user" and "what did I get?" in m["content"]]
    assert len(asked) == 1 and asked[0]["content"].index("the answer is 42") < (
        asked[0]["content"].index("what did I get?"))  # the note first, in the one message
    run(client, "%%chat\nwhat did I get?", "cell-b")  # a chat cell that worked, re-run
    again = "\n".join(str(m["content"] or "") for m in value(client, "model.requests[-1]"))
    assert again.count(NOTE) == 1 and again.count("the answer is 42") == 1
    assert value(client, "len(model.steps)") == 0


def test_what_a_cell_printed_on_both_streams_is_seen_bounded(client: Any) -> None:
    """The kernel's streams hand each message they send to the hooks the log registers:
    stdout and stderr both reach the note, a flood only by its head and tail, and the
    front end still receives all of it."""
    run(client, SETUP.replace('provider_error(400, "Invalid request: unsupported parameter"),',
                              ""), "cell-setup")
    flood = "import sys\nprint('first line')\nprint('x' * 100_000)\n" \
        "print('to stderr', file=sys.stderr)\nprint('last line')"
    shown = run(client, flood, "cell-a")
    streamed = "".join(m["content"].get("text", "") for m in shown if m["msg_type"] == "stream")
    assert streamed.count("x") >= 100_000  # the hooks pass every message on
    run(client, "%%chat\nwhat did it print?", "cell-b")
    sent = "\n".join(str(m["content"] or "") for m in value(client, "model.requests[-1]"))
    assert "first line" in sent and "to stderr" in sent and "last line" in sent
    assert sent.count("x" * 50) < 100_000 // 50  # bounded: the middle is cut
