"""Helpers of the notebook tests: a scripted session made current, a context state and a
decision to feed the displays, what a cell shows, and a real python3 kernel with the execute
request a front end sends it — one per test, or one the tests of a module take turns on
(`SharedKernel`)."""

from __future__ import annotations

import ast
import os
import queue
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbagent
from nbagent import Agent, Decision, Settings, context_state
from nbagent.testing import ScriptedModel, ScriptedSummarizer
from tests.helpers import nine_sections

WINDOW = Settings(max_context_tokens=8_192)  # auto-compact at 6,841; blocking at 7,250


def session(
    model: ScriptedModel, summarize: ScriptedSummarizer | None = None, *,
    kind: type[Agent] = Agent, **options: Any
) -> Agent:
    settings = options.pop("settings", Settings(max_context_tokens=8_192))
    agent = kind(
        model=model,
        settings=settings,
        namespace=options.pop("namespace", {}),
        summarize=summarize or ScriptedSummarizer(default=nine_sections()),
        **options,
    )
    return nbagent.set_current(agent)


def state(tokens: int, **options: Any) -> Any:
    """The context state of `tokens` in an 8,192-token window (`settings=` for another)."""
    settings = options.pop("settings", WINDOW)
    return context_state("m", tokens, settings=settings, model_info=None, **options)


def decision(**fields: Any) -> Decision:
    """A manual L2 compaction from 1,972 to 1,463 tokens, with `fields` changed."""
    base: dict[str, Any] = dict(action="compacted", trigger="manual", levels=["L2 memory"],
                                reason="", tokens_before=1_972, tokens_after=1_463,
                                threshold=6_841, changed=True, summary_calls=1)
    return Decision(**{**base, **fields})


def shown(captured: Any) -> list[dict[str, Any]]:
    """What the cell shows after these messages: each output in order, with updates
    applied to every output of the same display id; empty outputs left out."""
    outputs: list[tuple[str | None, dict[str, Any]]] = []
    for output in captured.outputs:
        display_id = (output.transient or {}).get("display_id")
        if output.update:
            outputs = [(i, output.data if i == display_id else d) for i, d in outputs]
        else:
            outputs.append((display_id, output.data))
    return [data for _, data in outputs if any(data.values())]


def plain(captured: Any) -> list[str]:
    return [str(data.get("text/plain", "")) for data in shown(captured)]


def html_of(captured: Any) -> str:
    """Every output's HTML (or Markdown), one per line."""
    return "\n".join(
        str(o.data.get("text/html", o.data.get("text/markdown", ""))) for o in captured.outputs
    )


KERNEL_WAIT_S = 120


@contextmanager
def python_kernel(folder: Path, *, settings: Mapping[str, str] | None = None
                  ) -> Iterator[tuple[Any, Any]]:
    """A real python3 kernel (jupyter_client) working in `folder`, its archive there too,
    with its default figure backend (the inline one): its manager and a ready client.
    Given `settings`, nbagent's and OpenAI's settings come from them alone (none from the
    shell that runs the tests)."""
    env = dict(os.environ)
    if settings is not None:
        env = {k: v for k, v in env.items() if not k.startswith(("NBAGENT_", "OPENAI_"))}
    env.update({"NBAGENT_DATA_DIR": str(folder / "data"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                **(settings or {})})
    env.pop("MPLBACKEND", None)
    with started_kernel(folder, env) as started:
        yield started


@contextmanager
def started_kernel(folder: str | Path, env: Mapping[str, str], *,
                   timeout: float = KERNEL_WAIT_S) -> Iterator[tuple[Any, Any]]:
    """A real python3 kernel (jupyter_client) started in `folder` with exactly `env`: its
    manager and a client ready within `timeout` seconds. On the way out the channels close
    and the kernel is killed (`now=True`: no atexit runs in it, as when Jupyter kills a
    kernel). The start `python_kernel`, tests/reliability/test_local_server.py and
    bench/embedded_session.py share."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=dict(env), cwd=str(folder))
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=timeout)
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


# What a test leaves in a shared kernel, undone before the next one takes it: its session
# (closed, none current), the cells it ran waiting for a next chat, its figures, and the
# names it made in the user's namespace (`{fresh}`: those a fresh kernel has; `%reset -f`
# would do it too, at ~2 s of a kernel's time a test). Run silently: a silent request runs
# no pre/post_run_cell, so it is no cell the user ran.
RESET = """\
import sys as _sys
import nbagent as _nbagent, nbagent.agent as _agent_room
from nbagent.widgets import _cells_seen
if _agent_room.kernel_agent() is not None:
    _agent_room.kernel_agent().close()
_nbagent.set_current(None)
_cells_seen.LOG.cells.clear()
if "matplotlib.pyplot" in _sys.modules:
    _sys.modules["matplotlib.pyplot"].close("all")
[get_ipython().user_ns.pop(name) for name in set(get_ipython().user_ns) - {fresh!r}]
"""


class SharedKernel:
    """A real python3 kernel (`python_kernel`) the tests of one module take turns on, from
    a module-scoped fixture (`module_kernel`): started once, where a kernel per test cost
    each test its start and `%load_ext nbagent` (with the litellm import the load then
    began, ~6 s of CPU on 2 cores: none now with a stand-in current before the load).
    `turn(request)` hands it to one test and takes it back fresh: after a test that passed,
    `RESET` undoes what it left; after one that failed, or ended the kernel, the kernel is
    restarted (a failure may leave anything running). A test that must see a kernel nothing
    ran in yet keeps one of its own."""

    def __init__(self, manager: Any, client: Any, data: Path) -> None:
        self.manager = manager
        self.client = client
        self.data = data  # the kernel's NBAGENT_DATA_DIR
        names = self._silently("", names="sorted(get_ipython().user_ns)")
        self.fresh = set(ast.literal_eval(names["names"]["data"]["text/plain"]))

    @contextmanager
    def turn(self, request: Any) -> Iterator[tuple[Any, Any]]:
        """The kernel for the test of `request` (pytest's), cleaned up after it however it
        ended."""
        failed = request.session.testsfailed  # counted before a test's teardown starts
        servers = started_servers(self.data)
        try:
            yield self.manager, self.client
        except BaseException:  # the fixture's own setup in the kernel failed: start afresh
            self.restart()
            raise
        else:
            if request.session.testsfailed != failed or not self._reset():
                self.restart()
        assert started_servers(self.data) == servers, (
            "the kernel started an embedded llama.cpp server: make a scripted session "
            "current before %load_ext nbagent")

    def restart(self) -> None:
        self.manager.restart_kernel(now=True)
        self.client.wait_for_ready(timeout=KERNEL_WAIT_S)

    def _reset(self) -> bool:
        """Run `RESET`: False when the kernel is gone or it did not run cleanly."""
        if not self.manager.is_alive():
            return False
        try:
            self._silently(RESET.format(fresh=self.fresh))
        except (AssertionError, queue.Empty):
            return False
        return True

    def _silently(self, code: str, **expressions: str) -> dict[str, Any]:
        """Run `code` as a silent request (no cell the user ran) and evaluate
        `expressions` after it: their results, by name."""
        msg_id = self.client.execute(code, silent=True, store_history=False,
                                     user_expressions=expressions)
        while True:
            reply = self.client.get_shell_msg(timeout=KERNEL_WAIT_S)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        assert reply["content"]["status"] == "ok", reply["content"]
        results: dict[str, Any] = reply["content"]["user_expressions"]
        assert all(r["status"] == "ok" for r in results.values()), results
        return results


@contextmanager
def shared_kernel(folder: Path) -> Iterator[SharedKernel]:
    """A `SharedKernel` working in `folder`, its settings nbagent's defaults (none from the
    shell that runs the tests: a module's fixture starts before a test's own clean-up of
    the environment); stopped when the module's tests are done, however they ended."""
    with python_kernel(folder, settings={}) as (manager, client):
        yield SharedKernel(manager, client, folder / "data")


def started_servers(folder: Path) -> list[str]:
    """The embedded llama.cpp servers begun with a data folder within `folder`: each
    leaves its `servers/*.clients` file there (started or failing to start)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("servers/*.clients"))


def execute(client: Any, code: str, *, cell_id: str | None = None, allow_stdin: bool = False,
            answer: str | None = None, on_input: Callable[[], None] | None = None,
            interrupt: Callable[[list[dict[str, Any]]], None] | None = None,
            ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run `code` as a front end sends it and wait until it ends: the execute reply's
    content and every iopub message of the cell. JupyterLab names the cell it runs in the
    request's metadata (`cellId`: the kernel takes it for a notebook, whose outputs are
    redrawn in place); nbclient and jupyter console name none, nbclient offering no input
    box (`allow_stdin` off). When the kernel asks for input, `answer` is typed (or
    `on_input()` is called instead); `interrupt(messages)` is called as messages arrive
    and may interrupt."""
    content = {"code": code, "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": allow_stdin, "stop_on_error": True}
    request = client.session.msg("execute_request", content,
                                 metadata={"cellId": cell_id} if cell_id else {})
    client.shell_channel.send(request)
    msg_id = str(request["header"]["msg_id"])
    asking = answer is not None or on_input is not None
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + KERNEL_WAIT_S
    while True:
        assert time.monotonic() < deadline, f"the cell did not finish: {messages}"
        if asking:
            try:
                if client.get_stdin_msg(timeout=0.05)["msg_type"] == "input_request":
                    if on_input is not None:
                        on_input()
                    else:
                        client.input(answer)
                    asking = False
            except queue.Empty:
                pass
        try:
            message = client.get_iopub_msg(timeout=0.2)
        except queue.Empty:
            continue
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
        messages.append(message)
        if interrupt is not None:
            interrupt(messages)
    while True:
        reply = client.get_shell_msg(timeout=KERNEL_WAIT_S)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"], messages


def printed(messages: list[dict[str, Any]]) -> str:
    """Everything a cell printed, from its iopub messages: its streams and tracebacks."""
    parts = []
    for message in messages:
        if message["msg_type"] == "stream":
            parts.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            parts.append("\n".join(message["content"]["traceback"]))
    return "".join(parts)
