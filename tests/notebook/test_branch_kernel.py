"""A delegated task in a real python3 kernel (jupyter_client, ipykernel; ScriptedModel
drives the main agent and its branch, one script): the chat cell shows one branch line,
redrawn in place, and the branch's code run with its outputs; code the branch runs asks on
the front end's input box as the main agent's does (and a "no" runs nothing); the kernel's
interrupt stops the branch and its runaway code, both histories valid, and the session
goes on."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.notebook.helpers import SharedKernel, execute

pytestmark = pytest.mark.real
jupyter_client = pytest.importorskip("jupyter_client")

SETUP = textwrap.dedent("""\
    import json, nbagent
    from nbagent.testing import ScriptedModel, calls, reply
    with open("app.log", "w") as log:
        log.writelines(f"line {i} ok\\n" for i in range(20_000))
    def scripted(*steps, policy="auto"):
        model = ScriptedModel(list(steps))
        agent = nbagent.new_session(model=model, settings=nbagent.Settings(
            max_context_tokens=32_000, run_code=policy))
        return model, agent
    def tool_results(agent):
        return [m["content"] for m in agent.history.messages if m["role"] == "tool"]
    def branch_records(agent):
        return [r for r in nbagent.testing.read_records(agent.session.archive.path)
                if r["kind"] in ("branch", "branch_message")]
    # a scripted session current at the load: it warms no embedded model's server
    nbagent.set_current(nbagent.Agent(model=ScriptedModel(), namespace={}, archive=False))
    %load_ext nbagent
""")
DELEGATE = "calls(('delegate', {'task': 'look at the log', 'data': ['app.log']}))"



@pytest.fixture
def kernel(module_kernel: SharedKernel, request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """The module's kernel for one test, fresh (`SharedKernel`), SETUP run in it."""
    with module_kernel.turn(request) as running:
        reply, messages = execute(running[1], SETUP, cell_id="setup")
        assert reply["status"] == "ok", messages
        yield running


def run(client: Any, code: str, **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    options.setdefault("cell_id", "cell-1")
    allow = options.get("answer") is not None or options.get("on_input") is not None
    return execute(client, code, allow_stdin=allow, **options)


def script(client: Any, steps: str) -> None:
    """A scripted session made current in the kernel, its model's steps as written."""
    reply, messages = run(client, f"model, agent = scripted({steps})")
    assert reply["status"] == "ok", messages


def value(client: Any, expression: str) -> Any:
    reply, messages = run(client, f"print(json.dumps({expression}))")
    assert reply["status"] == "ok", messages
    return json.loads("".join(m["content"]["text"] for m in messages
                              if m["msg_type"] == "stream"))


def shown(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bundles the cell shows, after in-place updates (by display id)."""
    outputs: list[dict[str, Any]] = []
    by_id: dict[str, int] = {}
    for message in messages:
        content = message["content"]
        display_id = content.get("transient", {}).get("display_id")
        if message["msg_type"] == "display_data":
            if display_id:
                by_id[display_id] = len(outputs)
            outputs.append(content["data"])
        elif message["msg_type"] == "update_display_data" and display_id in by_id:
            outputs[by_id[display_id]] = content["data"]
    return outputs


def branch_lines(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in shown(messages) if "nbagent-branch" in o.get("text/html", "")]


def test_the_cell_shows_one_branch_line_and_the_branchs_code_run(kernel: tuple[Any, Any]
                                                                 ) -> None:
    _, client = kernel
    code = "counted = sum(1 for _ in open('app.log'))\nprint('lines:', counted)"
    script(client, f"{DELEGATE}, calls(('read_file', {{'path': 'app.log', 'limit': 300}})), "
                   f"calls(('run_code', {{'code': {code!r}}})), reply('20,000 lines, all ok'), "
                   "reply('The log has 20,000 lines.')")
    reply, messages = run(client, "%%chat\nhow long is the log?")
    assert reply["status"] == "ok"
    (line,) = branch_lines(messages)
    assert line["text/plain"].startswith(
        "delegated task 1: look at the log → done: 2 round(s), 2 tool call(s)")
    assert "read_file(path=&#x27;app.log&#x27;, limit=300) →" in line["text/html"]
    updates = [m for m in messages if m["msg_type"] == "update_display_data"
               and "nbagent-branch" in m["content"]["data"].get("text/html", "")]
    assert any("running read_file" in m["content"]["data"]["text/plain"] for m in updates)
    outputs = shown(messages)
    (ran,) = [o for o in outputs if "agent run 1" in o.get("text/markdown", "")]
    assert "ran in" in ran["text/markdown"]  # the branch's code, shown in the chat cell
    assert any(o.get("text/plain", "").startswith("lines: 20000") for o in outputs)
    assert not any(o.get("text/plain", "").startswith("delegate(") for o in outputs)
    assert value(client, "counted") == 20_000
    (result,) = value(client, "tool_results(agent)")
    assert result.startswith("[delegated task 1 (done)") and "20,000 lines" in result
    assert "line 150 ok" not in json.dumps(value(client, "agent.history.messages"))


@pytest.mark.parametrize(("answer", "ran"), [("y", True), ("n", False)], ids=["yes", "no"])
def test_the_branchs_code_asks_on_the_input_box(kernel: tuple[Any, Any], answer: str,
                                                ran: bool) -> None:
    _, client = kernel
    script(client, f"{DELEGATE}, calls(('run_code', {{'code': 'made_in_branch = 7'}})), "
                   "reply('asked'), reply('ok'), policy='ask'")
    reply, messages = run(client, "%%chat\nset it", answer=answer)
    assert reply["status"] == "ok"
    (code,) = [o for o in shown(messages) if "agent run 1" in o.get("text/markdown", "")]
    assert ("ran in" in code["text/markdown"]) is ran
    assert value(client, "'made_in_branch' in globals()") is ran
    transcript = [r["message"] for r in value(client, "branch_records(agent)")
                  if "message" in r]
    (outcome,) = [m["content"] for m in transcript if m["role"] == "tool"]
    assert ("declined" in outcome) is not ran
    assert len(branch_lines(messages)) == 1


def test_the_interrupt_stops_the_branch_and_its_code_and_the_session_goes_on(
        kernel: tuple[Any, Any]) -> None:
    manager, client = kernel
    flood = "n = 0\nwhile True:\n    n += 1\n    print('line', n)"
    script(client, f"{DELEGATE}, calls(('run_code', {{'code': {flood!r}}})), reply('after')")
    sent: list[bool] = []

    def interrupt(messages: list[dict[str, Any]]) -> None:
        printed = [m for m in messages if m["msg_type"] == "update_display_data"
                   and m["content"]["data"].get("text/plain", "").startswith("line")]
        if len(printed) >= 3 and not sent:
            sent.append(True)
            manager.interrupt_kernel()

    reply, messages = run(client, "%%chat\nloop", interrupt=interrupt)
    assert sent
    (code,) = [o for o in shown(messages) if "agent run 1" in o.get("text/markdown", "")]
    assert "interrupted after" in code["text/markdown"]
    time.sleep(0.5)
    stopped = value(client, "n")
    time.sleep(0.5)
    assert value(client, "n") == stopped  # nothing runs on unseen
    (answered,) = value(client, "tool_results(agent)")
    assert answered.startswith("Interrupted")  # the main history's open call
    value(client, "agent.history.check_ready()")
    records = value(client, "branch_records(agent)")
    (ended,) = [r for r in records if r["kind"] == "branch"]
    assert ended["status"] == "interrupted"
    transcript = [r["message"] for r in records if r["kind"] == "branch_message"]
    assert transcript[-1]["role"] == "tool"  # the branch's own call answered too
    (line,) = branch_lines(messages)
    assert "→ interrupted" in line["text/plain"]
    reply, _ = run(client, "%%chat\nare you there?")
    assert reply["status"] == "ok"
    assert value(client, "agent.history.messages[-1]['content']") == "after"
