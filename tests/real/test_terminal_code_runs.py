"""Code the model runs, in a real terminal IPython driven through a pty (pexpect, as a user
types): the code is printed once (its escapes written out as ⟨U+001B⟩, as it will run),
what it printed once and whole at the end of the run (never redrawn), the value and the
run's outcome once each, and no control sequence the code printed or its value's repr
carried reaches the terminal raw."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.real.test_terminal import spawn, typed

pytestmark = pytest.mark.real
pexpect = pytest.importorskip("pexpect")

# Printed over ~1 s (several redraw intervals), with a colour, a link and a window title.
CODE = """import time
class Shade:
    def __repr__(self):
        return "\x1b[31mred\x1b[0m shade \x1b]0;pwned\x07"
for i in range(4):
    print(f"\x1b[1mtick\x1b[0m {i} \x1b]8;;http://x.test\x07link\x1b]8;;\x07")
    time.sleep(0.3)
Shade()"""


def test_a_run_in_a_terminal_prints_each_thing_once_and_no_control_sequence(
        tmp_path: Path) -> None:
    child = spawn([sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner",
                   "--colors=NoColor", "--HistoryManager.enabled=False"], tmp_path)
    try:
        typed(child, f"code = {CODE!r}")  # one line: the escapes stay escaped
        typed(child, "agent = nbagent.new_session(model=ScriptedModel([calls(('run_code', "
                     "{'code': code})), reply('Done.')]), settings=nbagent.Settings("
                     "max_context_tokens=8192, run_code='auto'))")
        printed = typed(child, "%chat tick")
    finally:
        child.sendline("exit")
        child.expect(pexpect.EOF, timeout=60)
        child.close()
    assert "\x1b" not in printed and "\x07" not in printed
    # the code is shown as it will run, its escapes written out; what it printed is bare
    assert printed.count("pwned") == printed.count("⟨U+001B⟩]0;pwned⟨U+0007⟩") == 1
    lines = [line.strip() for line in printed.replace("\r", "").splitlines() if line.strip()]
    assert sum(line == "for i in range(4):" for line in lines) == 1, lines  # the code once
    for i in range(4):
        assert lines.count(f"tick {i} link") == 1, lines  # printed once, whole
    assert lines.count("red shade") == 1, lines  # the value once
    outcome = [line for line in lines if line.startswith("agent run 1 · ran in")]
    assert len(outcome) == 1, lines
    assert lines.index("tick 3 link") < lines.index("red shade") < lines.index(outcome[0])
    assert sum("Done." in line for line in lines) == 1, lines


def test_a_terminal_is_told_the_truth_the_model_hears_terminal_and_printed_text(
        tmp_path: Path) -> None:
    child = spawn([sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner",
                   "--colors=NoColor", "--HistoryManager.enabled=False"], tmp_path)
    try:
        typed(child, "model = ScriptedModel([calls(('run_code', {'code': 'print(6 * 7)'})), "
                     "reply('Done.'), reply('It printed a greeting.')])")
        typed(child, "agent = nbagent.new_session(model=model, settings=nbagent.Settings("
                     "max_context_tokens=8192, run_code='auto'))")
        typed(child, "%chat compute")
        typed(child, "print('hello from my cell'); 1234 + 1")
        typed(child, "%chat what did my cell print?")
        typed(child, "import json")
        typed(child, "open('told.json', 'w').write(json.dumps([[m['role'], m['content']] "
                     "for m in model.requests[-1]]))")
    finally:
        child.sendline("exit")
        child.expect(pexpect.EOF, timeout=60)
        child.close()
    told = json.loads((tmp_path / "told.json").read_text())
    (tool,) = [content for role, content in told if role == "tool"]
    user = [content for role, content in told if role == "user"][-1]
    assert "in the terminal" in tool and "notebook" not in tool and "42" in tool
    assert "hello from my cell" in user and "(no output)" not in user
    assert user.count("1235") == 1  # the value once, not again as the Out[n] line
