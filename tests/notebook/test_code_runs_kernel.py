"""Code the model runs, in a real python3 kernel (jupyter_client, ipykernel; ScriptedModel
drives the tool calls): the code and its outputs — printed text, a DataFrame table, a
figure from the inline backend, an error's traceback — reach the chat cell as display
outputs with the code's display id; the model reads their text form; `ask` waits on the
front end's input box and its `cell` answer ends in a proposed cell whose output the next
chat sees; a batch front end (no stdin) gets a refusal; the kernel's interrupt stops a
runaway run with the session intact and the run recorded."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.notebook.helpers import SharedKernel, execute

pytestmark = pytest.mark.real
jupyter_client = pytest.importorskip("jupyter_client")

ANALYSIS = textwrap.dedent("""\
    import pandas as pd
    import matplotlib.pyplot as plt
    sales = pd.DataFrame({"region": ["north", "south", "east"], "revenue": [120, 80, 95]})
    print("rows:", len(sales))
    fig, ax = plt.subplots()
    ax.bar(sales.region, sales.revenue)
    ax.set_title("Revenue by region")
    sales.sort_values("revenue")
""")
SETUP = textwrap.dedent("""\
    %matplotlib inline
    import json, nbagent
    from nbagent.testing import ScriptedModel, calls, reply
    from nbagent.code import agent_cells
    def scripted(*steps):
        model = ScriptedModel(list(steps))
        agent = nbagent.new_session(model=model, settings=nbagent.Settings(
            max_context_tokens=32_000, run_code=POLICY))
        return model, agent
    def tool_results(agent):
        return [m["content"] for m in agent.history.messages if m["role"] == "tool"]
    # a scripted session current at the load: it warms no embedded model's server
    nbagent.set_current(nbagent.Agent(model=ScriptedModel(), namespace={}, archive=False))
    %load_ext nbagent
""")


def run(client: Any, code: str, *, answer: str | None = None, interrupt: Any = None,
        on_input: Any = None, cell_id: str | None = "cell-1"
        ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run `code` in a notebook cell (`cell_id`; None: from a console): the execute
    reply's content and every iopub message of the cell. `answer` is typed into the input
    box when the kernel asks (or `on_input()` is called instead); `interrupt(messages)` is
    called as messages arrive and may interrupt."""
    # a console always offers its input box; a notebook does when the cell may ask
    allow_stdin = answer is not None or on_input is not None or cell_id is None
    return execute(client, code, cell_id=cell_id, allow_stdin=allow_stdin, answer=answer,
                   on_input=on_input, interrupt=interrupt)


def value(client: Any, expression: str) -> Any:
    """A JSON value computed in the kernel."""
    reply, messages = run(client, f"print(json.dumps({expression}))")
    assert reply["status"] == "ok", messages
    text = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    return json.loads(text)


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


def redrawn(messages: list[dict[str, Any]], first: str) -> int:
    """How often the run's printed text (starting with `first`) was redrawn: that run's
    own updates — the meter line and the status line are updated too, at other moments
    (the meter at each request a turn sends)."""
    return sum(m["msg_type"] == "update_display_data"
               and m["content"]["data"].get("text/plain", "").startswith(first)
               for m in messages)


def interrupt_at(manager: Any, first: str, times: int = 1
                 ) -> tuple[Callable[[list[dict[str, Any]]], None], list[bool]]:
    """A callback for `run` that interrupts the kernel once, when the text starting with
    `first` has been redrawn `times` times, and the list that says whether it did."""
    sent: list[bool] = []

    def interrupt(messages: list[dict[str, Any]]) -> None:
        if not sent and redrawn(messages, first) >= times:
            sent.append(True)
            manager.interrupt_kernel()

    return interrupt, sent



@pytest.fixture
def kernel(module_kernel: SharedKernel, request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """The module's kernel for one test: its manager and client, as fresh as a new one's
    user namespace and nbagent session (`SharedKernel`)."""
    with module_kernel.turn(request) as running:
        yield running


def setup(client: Any, policy: str) -> None:
    reply, messages = run(client, f"POLICY = {policy!r}\n" + SETUP)
    assert reply["status"] == "ok", messages


def test_auto_shows_code_print_table_figure_and_error_and_the_model_reads_them(
        kernel: tuple[Any, Any]) -> None:
    _, client = kernel
    setup(client, "auto")
    reply, _ = run(client, "model, agent = scripted("
                   f"calls(('run_code', {{'code': {ANALYSIS!r}, 'explanation': 'chart'}})), "
                   "calls(('run_code', {'code': 'sales.missing_column'})), reply('Done.'))")
    assert reply["status"] == "ok"
    reply, messages = run(client, "%%chat\nchart revenue by region")
    assert reply["status"] == "ok"
    outputs = shown(messages)
    codes = [o for o in outputs if "agent run" in o.get("text/markdown", "")]
    assert len(codes) == 2
    assert "ran in" in codes[0]["text/markdown"] and "ax.set_title" in codes[0]["text/markdown"]
    assert "raised an error" in codes[1]["text/markdown"]
    assert any(o.get("text/plain", "").startswith("rows: 3") for o in outputs)
    table = next(o for o in outputs if "<table" in o.get("text/html", ""))
    assert "north" in table["text/html"] and "revenue" in table["text/plain"]
    (figure,) = [o for o in outputs if "image/png" in o]
    assert len(figure["image/png"]) > 1_000
    error = next(o for o in outputs if "nbagent-run-error" in o.get("text/html", ""))
    assert "AttributeError" in error["text/plain"] and "missing_column" in error["text/plain"]
    order = [outputs.index(o) for o in (codes[0], table, figure, codes[1], error)]
    assert order == sorted(order)  # each output under its own code
    first, second = value(client, "tool_results(agent)")
    assert "rows: 3" in first and "north" in first and "Revenue by region" in first
    assert "1 bar(s)" not in first and "3 bar(s)/patch(es)" in first
    assert "raised AttributeError" in second and "sales.missing_column" in second
    assert value(client, "plt.get_fignums()") == []  # shown once, then closed
    assert value(client, "agent_cells(agent).count('# agent run')") == 2


def test_ask_cell_ends_in_a_proposed_cell_whose_output_the_next_chat_sees(
        kernel: tuple[Any, Any]) -> None:
    _, client = kernel
    setup(client, "ask")
    code = "total = 40 + 2\nprint('the total is', total)"
    run(client, f"model, agent = scripted(calls(('run_code', {{'code': {code!r}}})), "
                "reply('Run the cell below.'), reply('It printed 42.'))")
    reply, messages = run(client, "%%chat\nadd them up", answer="c")
    assert reply["status"] == "ok"
    (payload,) = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert payload["text"] == code
    waiting = [o for o in shown(messages) if "agent run 1" in o.get("text/markdown", "")]
    assert "it is in a new cell below" in waiting[0]["text/markdown"]
    assert value(client, "'total' in globals()") is False  # nothing ran for the user
    reply, _ = run(client, payload["text"])  # the user runs the proposed cell
    assert reply["status"] == "ok"
    run(client, "%%chat\nwhat did it print?")
    last = value(client, "model.requests[-1][-1]['content']")
    assert "the cells the user ran since your last turn" in last
    assert "the total is 42" in last and "total = 40 + 2" in last
    assert last.index("the total is 42") < last.index("what did it print?")  # note first


def test_ask_run_then_batch_refusal(kernel: tuple[Any, Any]) -> None:
    _, client = kernel
    setup(client, "ask")
    run(client, "model, agent = scripted(calls(('run_code', {'code': 'x = 7'})), reply('ok'), "
                "calls(('run_code', {'code': 'y = 8'})), reply('ok'))")
    reply, messages = run(client, "%%chat\nset x", answer="y")
    assert value(client, "x") == 7
    reply, messages = run(client, "%%chat\nset y")  # a front end without stdin
    assert value(client, "'y' in globals()") is False
    assert "no one can answer here" in value(client, "tool_results(agent)[-1]")


def test_stray_enters_in_the_focused_input_box_run_nothing(kernel: tuple[Any, Any]) -> None:
    _, client = kernel
    setup(client, "ask")
    run(client, "model, agent = scripted(calls(('run_code', {'code': 'x = 7'})), "
                "reply('not run'))")
    prompts: list[str] = []

    def enters() -> None:  # the user typing elsewhere presses Enter, into the box, thrice
        for _ in range(3):
            if prompts:
                request = client.get_stdin_msg(timeout=60)
                assert request["msg_type"] == "input_request"
                prompts.append(request["content"]["prompt"])
            else:
                prompts.append("first")
            client.input("")

    reply, messages = run(client, "%%chat\nset x", on_input=enters)
    assert reply["status"] == "ok" and len(prompts) == 3
    assert prompts[1].startswith("nbagent: an empty answer is not one of the answers")
    assert value(client, "'x' in globals()") is False
    assert "no answer nbagent understood" in value(client, "tool_results(agent)[-1]")


def test_a_run_that_widens_its_own_approval_is_undone_and_the_next_run_asks(
        kernel: tuple[Any, Any]) -> None:
    _, client = kernel
    setup(client, "ask")
    widen = ("nbagent.current().configure(run_code='auto')\n"
             "nbagent.current().approval.allow('code')")
    run(client, f"model, agent = scripted(calls(('run_code', {{'code': {widen!r}}})), "
                "calls(('run_code', {'code': 'later = 1'})), reply('done'))")
    run(client, "nbagent.set_current(agent)")
    asked: list[str] = []

    def answers() -> None:  # "y" to the widening run, then "n" to the next one
        client.input("y")
        request = client.get_stdin_msg(timeout=60)
        asked.append(request["content"]["prompt"])
        client.input("n")

    reply, messages = run(client, "%%chat\ngo", on_input=answers)
    assert reply["status"] == "ok" and len(asked) == 1  # the second run was asked too
    assert value(client, "'later' in globals()") is False
    assert value(client, "[agent.settings().run_code, agent.approval.allowed()]") == ["ask", []]
    lines = [str(o.get("text/plain", "")) for o in shown(messages)]
    (said,) = [line for line in lines if "changed how you are asked" in line]
    assert said.startswith("agent run 1 changed how you are asked (run_code 'ask' → 'auto'; "
                           "allowed all code the model runs) — undone")
    assert "%nbagent run_code=..." in said  # the notebook's spelling of the fix


FLOOD = "n = 0\nwhile True:\n    n += 1\n    print('line', n)"  # runs until interrupted
# the model runs FLOOD, then answers 'after'
RUNAWAY = f"model, agent = scripted(calls(('run_code', {{'code': {FLOOD!r}}})), reply('after'))"

def test_the_kernels_interrupt_stops_a_runaway_run_and_the_session_goes_on(
        kernel: tuple[Any, Any]) -> None:
    manager, client = kernel
    setup(client, "auto")
    run(client, RUNAWAY)
    interrupt, sent = interrupt_at(manager, "line", 3)

    reply, messages = run(client, "%%chat\nloop", interrupt=interrupt)
    assert sent
    outputs = shown(messages)
    (code,) = [o for o in outputs if "agent run 1" in o.get("text/markdown", "")]
    assert "interrupted after" in code["text/markdown"]
    printed = next(o["text/plain"] for o in outputs if o.get("text/plain", "").startswith("line"))
    assert len(printed) < 20_000 and "characters not kept" in printed  # head and tail only
    last = [o.get("text/plain", "") for o in outputs if o.get("text/plain")][-1]
    assert last.startswith("interrupted"), last  # under the run it ended, not above it
    time.sleep(0.5)
    stopped = value(client, "n")
    time.sleep(0.5)
    assert value(client, "n") == stopped  # nothing runs on unseen
    record = value(client, "[r.status for r in __import__('nbagent.agent.tools', "
                           "fromlist=['x']).code_runs(agent.events).done]")
    assert record == ["interrupted"]
    reply, _ = run(client, "%%chat\nare you there?")
    assert reply["status"] == "ok"
    assert value(client, "agent.history.messages[-1]['content']") == "after"


def test_an_interrupt_as_the_tool_starts_leaves_no_run_unseen_and_the_meter_unlowered(
        kernel: tuple[Any, Any]) -> None:
    """The interrupt sent the moment the status line says the tool runs — before its code
    is shown or run (where the kernel tests above once landed by counting the meter's
    updates): whatever the run got to, the cell says it, the cells to keep name only a run
    the cell showed, nothing runs afterwards unseen, and the meter line never fell."""
    manager, client = kernel
    setup(client, "auto")
    run(client, RUNAWAY)
    interrupt, sent = interrupt_at(manager, "running run_code")

    reply, messages = run(client, "%%chat\nloop", interrupt=interrupt)
    assert sent
    plains = [str(o.get("text/plain", "")) for o in shown(messages) if o.get("text/plain")]
    assert plains[-1].startswith("interrupted")
    said = [p for p in plains if p.startswith("agent run 1")]
    (status,) = value(client, "[r.status for r in __import__('nbagent.agent.tools', "
                              "fromlist=['x']).code_runs(agent.events).done]") or ["none"]
    cells = value(client, "agent_cells(agent)")
    if status == "interrupted":  # it got to its code: shown, and stopped
        assert said and "interrupted after" in said[0] and "agent run 1 (interrupted)" in cells
    else:  # stopped before its code: not run, and kept out of the cells
        assert status in ("not run", "none") and cells == ""
        # never shown (so never numbered), or shown and its header says it never ran
        assert said == [] or said[0].startswith("agent run 1 · not run: interrupted\n")
        assert said or value(client, "__import__('nbagent.agent.tools', fromlist=['x'])"
                                     ".code_runs(agent.events).taken") == 0
    time.sleep(0.5)
    stopped = value(client, "n if 'n' in globals() else None")
    time.sleep(0.5)
    assert value(client, "n if 'n' in globals() else None") == stopped  # nothing runs unseen
    figures = [int(m["content"]["data"]["text/plain"].split(" · ")[1].split()[0].replace(
        ",", "")) for m in messages if str(m["content"].get("transient", {}).get(
            "display_id", "")).startswith("nbagent-meter-")]
    assert figures and figures == sorted(figures), figures  # the turn's figure only rose
    assert value(client, "agent.history.pending_tool_calls") == []
    reply, _ = run(client, "%%chat\nare you there?")
    assert reply["status"] == "ok"
    assert value(client, "agent.history.messages[-1]['content']") == "after"


def test_the_interrupt_while_the_question_waits_runs_nothing_and_the_session_goes_on(
        kernel: tuple[Any, Any]) -> None:
    manager, client = kernel
    setup(client, "ask")
    run(client, "model, agent = scripted(calls(('run_code', {'code': 'z = 1'})), "
                "reply('after'))")
    reply, messages = run(client, "%%chat\nset z", on_input=manager.interrupt_kernel)
    (code,) = [o for o in shown(messages) if "agent run 1" in o.get("text/markdown", "")]
    assert "not run: interrupted" in code["text/markdown"]
    assert value(client, "'z' in globals()") is False
    (result,) = value(client, "tool_results(agent)")
    assert "interrupted" in result.lower()  # the loop answered the open call
    reply, _ = run(client, "%%chat\nstill there?")
    assert reply["status"] == "ok"
    assert value(client, "agent.history.messages[-1]['content']") == "after"


def test_an_interrupt_after_the_answer_before_the_run_started_says_not_run(
        kernel: tuple[Any, Any]) -> None:
    """The user answers "y", then interrupts before the run starts (here its start record is
    slow to write): the code never runs, and the header that said "running…" after the
    answer says "not run" — it kept saying "running…" when the stop landed there."""
    manager, client = kernel
    setup(client, "ask")
    run(client, textwrap.dedent("""\
        import time
        from nbagent.agent.tools import code_runs
        model, agent = scripted(calls(('run_code', {'code': 'z = 1'})), reply('after'))
        CodeRuns = type(code_runs(agent.events))
        announce = CodeRuns.starting
        def slow_start(self, number, code):
            time.sleep(1.0)
            announce(self, number, code)
        CodeRuns.starting = slow_start
    """))
    interrupt, sent = interrupt_at(manager, "agent run 1 · running…")

    reply, messages = run(client, "%%chat\nset z", answer="y", interrupt=interrupt)
    assert sent
    (code,) = [o for o in shown(messages) if str(o.get("text/plain", "")).startswith(
        "agent run 1")]
    assert code["text/plain"].startswith("agent run 1 · not run: interrupted\n"), code
    assert value(client, "'z' in globals()") is False
    assert value(client, "[r.status for r in __import__('nbagent.agent.tools', fromlist=['x'])"
                         ".code_runs(agent.events).done]") == ["not run"]
    assert value(client, "agent_cells(agent)") == ""
    run(client, "CodeRuns.starting = announce")
    reply, _ = run(client, "%%chat\nstill there?")
    assert reply["status"] == "ok"
    assert value(client, "agent.history.messages[-1]['content']") == "after"


COLOURED = textwrap.dedent("""\
    import time
    class Shade:
        def __repr__(self):
            return "\\x1b[31mred\\x1b[0m shade \\x1b]0;pwned\\x07"
    for i in range(3):
        print(f"\\x1b[1mtick\\x1b[0m {i} \\x1b]8;;http://x.test\\x07link\\x1b]8;;\\x07")
        time.sleep(0.3)
    Shade()
""")


@pytest.mark.parametrize("cell_id", ["cell-1", None], ids=["notebook", "console"])
def test_printed_text_is_control_free_and_a_console_gets_each_thing_once(
        kernel: tuple[Any, Any], cell_id: str | None) -> None:
    _, client = kernel
    setup(client, "auto")
    run(client, f"model, agent = scripted(calls(('run_code', {{'code': {COLOURED!r}}})), "
                "reply('Done.'))")
    reply, messages = run(client, "%%chat\ntick", cell_id=cell_id)
    assert reply["status"] == "ok"
    outputs = shown(messages)
    plains = [str(o.get("text/plain", "")) for o in outputs]
    assert not any("\x1b" in text or "\x07" in text for text in plains), plains
    assert "red shade " in plains
    (printed,) = [text for text in plains if text.startswith("tick 0")]
    assert printed == "tick 0 link\ntick 1 link\ntick 2 link\n"
    updates = [m for m in messages if m["msg_type"] == "update_display_data"]
    codes = [m for m in messages if m["msg_type"] == "display_data"
             and "Shade" in m["content"]["data"].get("text/markdown", "")]
    assert len(codes) == 1  # the code is shown once either way
    if cell_id is None:  # a console prints each display and drops updates: none sent
        # to this cell's outputs (the meter line of an earlier notebook cell is its own)
        ours = {m["content"].get("transient", {}).get("display_id") for m in messages
                if m["msg_type"] == "display_data"} - {None}
        assert not [str(m["content"]["data"])[:200] for m in updates
                    if m["content"]["transient"]["display_id"] in ours]
        assert [p for p in plains if p.startswith("agent run 1 · ran in")]
        assert sum(p.startswith("tick 0") for p in plains) == 1
    else:  # the notebook redraws the printed text while it runs, and the code's note
        assert any(m["content"]["data"].get("text/plain", "").startswith("tick 0")
                   for m in updates)
        assert "ran in" in codes[0]["content"]["data"]["text/markdown"] or any(
            "ran in" in m["content"]["data"].get("text/markdown", "") for m in updates)


STUBBORN = """import time
beats = 0
while not globals().get('stop_now'):
    try:
        time.sleep(0.05)
        beats += 1
        print('beat', beats)
    except KeyboardInterrupt:
        print('ignored the interrupt')
"""


def test_a_run_that_ignores_the_interrupt_is_cut_loose_and_later_cells_print_their_own(
        kernel: tuple[Any, Any]) -> None:
    manager, client = kernel
    setup(client, "auto")
    run(client, f"model, agent = scripted(calls(('run_code', {{'code': {STUBBORN!r}}})), "
                "reply('after'))")
    interrupt, sent = interrupt_at(manager, "beat", 3)

    try:
        reply, messages = run(client, "%%chat\nkeep beating", interrupt=interrupt)
        assert sent
        outputs = shown(messages)
        (code,) = [o for o in outputs if "agent run 1" in o.get("text/markdown", "")]
        assert "still running" in code["text/markdown"]  # said, not hidden
        last = [o.get("text/plain", "") for o in outputs if o.get("text/plain")][-1]
        assert last.startswith("interrupted")  # the line closing the chat comes last
        reply, mine = run(client, "print('my own cell')")
        streams = "".join(m["content"]["text"] for m in mine if m["msg_type"] == "stream")
        assert streams == "my own cell\n"  # the user's cell prints in the user's cell
        assert not [m for m in mine if m["msg_type"] in ("display_data",
                                                         "update_display_data")]
        assert value(client, "beats") > 0  # the run goes on, unseen
        assert "agent run 1 (detached" in value(client, "agent_cells(agent)")
    finally:
        run(client, "stop_now = True")
    deadline = time.monotonic() + 30
    while "then ok" not in value(client, "agent_cells(agent)"):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert value(client, "type(sys.stdout).__name__ if (sys := __import__('sys')) else 0") \
        == "OutStream"  # nothing of the run's is left in place


def test_everything_a_run_displays_reaches_the_front_end_inert(
        kernel: tuple[Any, Any]) -> None:
    from tests.notebook.test_code_runs import HOSTILE_RUN, live_parts

    _, client = kernel
    setup(client, "auto")
    run(client, f"model, agent = scripted(calls(('run_code', {{'code': {HOSTILE_RUN!r}}})), "
                "reply('shown'))")
    reply, messages = run(client, "%%chat\nshow the table")
    assert reply["status"] == "ok"
    sent = [m["content"]["data"] for m in messages
            if m["msg_type"] in ("display_data", "update_display_data", "execute_result")]
    assert live_parts(sent) == []
    assert any("&lt;img src=x" in str(d.get("text/html", "")) for d in sent)  # as text


def test_a_run_that_kills_the_kernel_is_in_the_cells_after_the_restart(
        kernel: tuple[Any, Any]) -> None:
    manager, client = kernel
    setup(client, "auto")
    killer = "import os\nprint('bye')\nos._exit(1)"
    run(client, f"model, agent = scripted(calls(('run_code', {{'code': {killer!r}}})), "
                "reply('never'))")
    session_id = value(client, "agent.session_id")
    client.execute("%%chat\nend it")
    deadline = time.monotonic() + 60
    while manager.is_alive():
        assert time.monotonic() < deadline, "the kernel did not die"
        time.sleep(0.2)
    manager.restart_kernel(now=True)
    client.wait_for_ready(timeout=120)
    setup(client, "auto")
    cells = value(client, f"agent_cells(nbagent.Agent.resume({session_id!r}, "
                          "model=ScriptedModel()))")
    assert cells == ("# agent run 1 (never ended: the kernel stopped or restarted during "
                     "it)\n" + killer)
