"""Terminals get text once: a chat with a tool round in a real terminal IPython and in a real
jupyter console (each driven through a pty by pexpect, as a user types) prints the tool line
once, the reply once (streamed, never re-printed), the meter once at the end of the turn and
no waiting line; control sequences the model sent never reach the terminal raw."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.real
pexpect = pytest.importorskip("pexpect")

WAIT_S = 120
PROMPT = r"In \[\d+\]: "
# The reply carries a window-title OSC, a screen erase and colours: none may reach the pty.
ANSWER = ("The answer is \\x1b]0;pwned\\x07 **42** rows.\\n\\nSecond \\x1b[2J line "
          "\\x1b[31mred\\x1b[0m end.")
SETUP = [
    "import nbagent; from nbagent.testing import ScriptedModel, reply, calls",
    "rows = 42",
    "agent = nbagent.new_session(model=ScriptedModel([calls(('list_variables', {})), "
    f"reply('{ANSWER}'), reply('Again: fine.')]), "
    "settings=nbagent.Settings(max_context_tokens=8192))",
    "%load_ext nbagent",
]


def spawn(command: list[str], tmp_path: Path) -> Any:
    env = {**os.environ, "NBAGENT_DATA_DIR": str(tmp_path / "data"), "TERM": "xterm",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
           "IPYTHONDIR": str(tmp_path / "ipython"), "PYTHONUNBUFFERED": "1"}
    child = pexpect.spawn(command[0], command[1:], env=env, cwd=str(tmp_path),
                          encoding="utf-8", timeout=WAIT_S, dimensions=(50, 200))
    child.expect(PROMPT)
    for line in SETUP:
        typed(child, line)
    return child


def typed(child: Any, line: str) -> str:
    """Type one line and return everything printed until the next prompt."""
    child.sendline(line)
    child.expect(PROMPT)
    return str(child.before)


COMMANDS = {
    "ipython": [sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner",
                "--colors=NoColor", "--HistoryManager.enabled=False"],
    "jupyter-console": [sys.executable, "-m", "jupyter_console", "--simple-prompt",
                        "--kernel=python3", "--ZMQTerminalInteractiveShell.banner="],
}


def ended(child: Any) -> None:
    try:
        child.sendline("exit")
        child.expect(pexpect.EOF, timeout=60)
    finally:
        child.close(force=True)


@pytest.fixture(scope="module")
def terminals(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The module's terminals, one of each kind, started at first use: each start is a
    Python process importing IPython and nbagent (and jupyter console's a kernel too)."""
    running: dict[str, Any] = {}
    try:
        yield running
    finally:
        for child in running.values():
            ended(child)


@pytest.fixture(params=list(COMMANDS))
def terminal(request: pytest.FixtureRequest, terminals: dict[str, Any],
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A terminal of the kind, with a fresh session (SETUP's scripted one, from its first
    reply on) in the module's process of that kind; after a test that failed, the next
    one gets a new process (a failure can leave the terminal mid-output)."""
    kind = request.param
    if kind in terminals:
        try:
            typed(terminals[kind], SETUP[2])
        except BaseException:  # a terminal that cannot take a fresh session serves no test
            ended(terminals.pop(kind))
            raise
    else:
        terminals[kind] = spawn(COMMANDS[kind], tmp_path_factory.mktemp(kind))
    failed = request.session.testsfailed
    yield terminals[kind]
    if request.session.testsfailed > failed:
        ended(terminals.pop(kind))


def test_a_chat_in_a_terminal_prints_each_thing_once(terminal: Any) -> None:
    printed = typed(terminal, "%chat how many rows?")
    lines = [line.strip() for line in printed.replace("\r", "").splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith("%chat")]
    assert len([line for line in said if line.startswith("list_variables()")]) == 1, said
    assert sum(line.count("The answer is") for line in said) == 1, said  # printed once
    assert "The answer is  **42** rows." in said, said  # (the OSC gone between the spaces)
    assert "Second  line red end." in said, said  # streamed word by word, one piece
    meters = [line for line in said if re.search(r"\d+% context left", line)]
    assert len(meters) == 1 and said[-1] == meters[0], said  # once, at the end of the turn
    assert not any("thinking" in line or line.startswith("running") for line in said), said
    # Nothing the model sent reaches the terminal as a control sequence.
    assert "pwned" not in printed and "\x1b]" not in printed and "\x1b[2J" not in printed
    assert "\x1b[31m" not in printed

    again = typed(terminal, "%chat and now?")
    said = [line.strip() for line in again.replace("\r", "").splitlines()
            if line.strip() and not line.strip().startswith("%chat")]
    assert said[0] == "Again: fine." and len(said) == 2, said
    assert re.search(r"\d+% context left", said[1]), said


def test_compact_and_the_meter_in_a_terminal_print_no_waiting_line(terminal: Any) -> None:
    typed(terminal, "%chat how many rows?")
    compacted = [line.strip() for line in typed(terminal, "%compact").replace(
        "\r", "").splitlines() if line.strip() and not line.strip().startswith("%compact")]
    assert not any("compacting…" in line for line in compacted), compacted
    assert len([line for line in compacted if re.search(r"\d+% context left", line)]) == 1
    meter = [line.strip() for line in typed(terminal, "%nbagent meter").replace(
        "\r", "").splitlines() if line.strip() and not line.strip().startswith("%nbagent")]
    assert len(meter) == 1 and re.search(r"\d+% context left", meter[0]), meter
