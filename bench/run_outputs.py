"""What a run of the model's code that displays a lot costs, beside a plain cell doing the
same: a real python3 kernel, one cell that displays 1,500 outputs of 8 KB (12 MB; half
HTML, half text),
then a chat whose `run_code` runs the same code (scripted model, policy auto): the seconds
each cell took, what the kernel sent the front end, and the session archive's size (every
output is made inert on its way out; the archive keeps the run's bounded text once).

    python bench/run_outputs.py          # prints a table, updates docs/tools.md
"""

from __future__ import annotations

import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.notebook.helpers import execute, python_kernel  # noqa: E402

DOC = ROOT / "docs" / "tools.md"
OUTPUTS, SIZE = 1_500, 8_000
CODE = ("from IPython.display import HTML, display\n"
        f"for i in range({OUTPUTS // 2}):\n"
        f"    display(HTML(f'<p>row {{i}} ' + 'x' * {SIZE} + '</p>'))\n"
        f"    display(f'row {{i}} ' + 'y' * {SIZE})")
SETUP = f"""\
import nbagent, os, litellm
from nbagent.testing import ScriptedModel, calls, reply
agent = nbagent.new_session(model=ScriptedModel([calls(('run_code', {{'code': {CODE!r}}})),
                                                 reply('shown')]),
                            settings=nbagent.Settings(run_code='auto'))
%load_ext nbagent
"""


def timed(client: Any, code: str) -> tuple[float, int]:
    """Seconds the cell took and the bytes of display data it sent."""
    started = time.monotonic()
    reply, messages = execute(client, code, cell_id="bench")
    assert reply["status"] == "ok", messages[-3:]
    sent = sum(len(str(m["content"].get("data", ""))) for m in messages
               if m["msg_type"] in ("display_data", "update_display_data"))
    return time.monotonic() - started, sent


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, python_kernel(Path(folder)) as (_, client):
        execute(client, SETUP, cell_id="setup")
        plain, plain_sent = timed(client, CODE)
        run, run_sent = timed(client, "%%chat\nshow it")
        archive = sum(p.stat().st_size for p in (Path(folder) / "data").rglob("*.jsonl"))
    table = "\n".join([
        "| cell | seconds | sent to the front end | archived |", "|---|---:|---:|---:|",
        f"| plain cell | {plain:.1f} | {plain_sent / 1e6:.1f} MB | — |",
        f"| agent run (inert, bounded) | {run:.1f} | {run_sent / 1e6:.1f} MB | "
        f"{archive / 1e3:.0f} KB |"])
    sys.stdout.write(table + "\n")
    machine = (f"{platform.machine()}, {platform.python_implementation()} "
               f"{platform.python_version()}")
    block = (f"<!-- bench:run_outputs -->\n_Written by `bench/run_outputs.py` on {machine}: "
             f"{OUTPUTS:,} outputs of {SIZE:,} characters (half HTML, half text), "
             "displayed by a plain cell and by an agent run in a real kernel (2 shared "
             f"cores)._\n\n{table}\n"
             "<!-- /bench:run_outputs -->")
    text = DOC.read_text(encoding="utf-8")
    pattern = re.compile(r"<!-- bench:run_outputs -->.*?<!-- /bench:run_outputs -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else \
        f"{text.rstrip()}\n\n{block}\n"
    DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
