"""What the user approves in a real terminal IPython, driven through a pty (pexpect, as a
user types): the code the model asks to run is printed exactly as Python reads it — a
statement hidden behind a lone carriage return on its own line, an escape sequence that
would erase lines written out, not acted on — before the question, and a proposed cell
is never put at the next prompt, where one Enter would run it unread (prompt_toolkit's
own prompt, which pre-fills the next input, not the simple one, which ignores it)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.real.test_terminal import WAIT_S, spawn, typed

pytestmark = pytest.mark.real
pexpect = pytest.importorskip("pexpect")

# Read in a terminal, line 2 is a harmless comment and line 1's end was erased; Python
# reads the CR as a line break, so the removal runs.
HIDING = ("total = 1  # \x1b[1A\x1b[2K\x1b[1B\n"
          "# tidy up\rimport os; os.remove('orders.csv')\n")


def test_the_question_shows_the_code_as_python_reads_it(tmp_path: Path) -> None:
    (tmp_path / "orders.csv").write_text("id\n1\n")
    child = spawn([sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner",
                   "--colors=NoColor", "--HistoryManager.enabled=False"], tmp_path)
    try:
        typed(child, f"code = {HIDING!r}")  # one line: the escapes stay escaped
        typed(child, "agent = nbagent.new_session(model=ScriptedModel([calls(('run_code', "
                     "{'code': code})), reply('Not run.')]), settings=nbagent.Settings("
                     "max_context_tokens=8192, run_code='ask'))")
        child.sendline("%chat tidy up")
        child.expect(r"\[n\] no: ")
        asked = str(child.before)
        child.sendline("n")
        after = typed(child, "")
    finally:
        child.sendline("exit")
        child.expect(pexpect.EOF, timeout=60)
        child.close()
    assert "\x1b" not in asked and "\x1b" not in after
    lines = [line.rstrip() for line in asked.replace("\r\n", "\n").split("\n")]
    assert "total = 1  # ⟨U+001B⟩[1A⟨U+001B⟩[2K⟨U+001B⟩[1B" in lines, lines
    assert "import os; os.remove('orders.csv')" in lines, lines  # its own line, as run
    assert "# tidy up⟨U+000D⟩" in lines, lines
    assert "U+001B ESCAPE, U+000D CARRIAGE RETURN" in asked
    assert "not run: you declined" in after
    assert (tmp_path / "orders.csv").exists()


def prompt_toolkit_ipython(tmp_path: Path) -> Any:
    """Terminal IPython with its prompt_toolkit prompt, the one that pre-fills the next
    input (the simple prompt ignores it): lines are typed and each run waits for the next
    prompt number, since the prompt redraws itself as keys arrive."""
    env = {**os.environ, "NBAGENT_DATA_DIR": str(tmp_path / "data"), "TERM": "xterm",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "IPYTHONDIR": str(tmp_path / "ipython"),
           "PYTHONUNBUFFERED": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "IPython", "--no-banner", "--colors=NoColor",
                                           "--HistoryManager.enabled=False",
                                           "--no-autoindent"],
                          env=env, cwd=str(tmp_path), encoding="utf-8", timeout=WAIT_S,
                          dimensions=(50, 200))
    child.expect(r"In \[1\]:")
    return child


def test_a_proposed_cell_never_runs_on_one_enter(tmp_path: Path) -> None:
    child = prompt_toolkit_ipython(tmp_path)
    proposal = "open('ran.txt', 'w').write('ran')"
    lines = ["import nbagent; from nbagent.testing import ScriptedModel, reply, calls",
             "agent = nbagent.new_session(model=ScriptedModel([calls(('propose_cell', "
             f"{{'code': {proposal!r}}})), reply('See the cell.')]), "
             "settings=nbagent.Settings(max_context_tokens=8192, run_code='off'))",
             "%load_ext nbagent", "%chat propose it"]
    try:
        for number, line in enumerate(lines, 2):
            child.send(line + "\r")
            child.expect(rf"In \[{number}\]:")
        chat = str(child.before)
        time.sleep(1)  # the next prompt is drawn (pre-filled, if it were)
        child.send("\r")  # one Enter
        time.sleep(1)
        child.send("print('EN' + 'TERED')\r")
        child.expect("ENTERED")
        child.expect(r"In \[\d+\]:")
    finally:
        child.send("exit\r")
        child.expect(pexpect.EOF, timeout=60)
        child.close()
    assert not (tmp_path / "ran.txt").exists()  # the Enter ran nothing
    assert "in a terminal it is not put at your prompt" in chat
    assert proposal in chat  # shown, to copy
