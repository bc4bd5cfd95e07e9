"""A chat cell run again and again carries the cells run before it, within the same bound
as between two chats: the note never counts more than the log keeps (20 cells), however
many times the cell was re-run with a cell run before each (each re-run replaces the
exchange, whose cells ride again)."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from nbagent.testing import ScriptedModel, reply
from tests.notebook.helpers import session

RERUNS = 30


def test_re_running_a_chat_cell_keeps_its_cells_within_the_bound(
        ip: InteractiveShell, monkeypatch: Any) -> None:
    model = ScriptedModel([reply(f"answer {n}") for n in range(RERUNS)])
    session(model, namespace=ip.user_ns)
    # the chat cell's id, as JupyterLab sends it with each run of that cell
    kernel = SimpleNamespace(get_parent=lambda: {"metadata": {"cellId": "chat-cell"}})
    monkeypatch.setattr(ip, "kernel", kernel, raising=False)
    made = [f"cell_value_{n}" for n in range(RERUNS)]
    try:
        for n, name in enumerate(made):
            ip.run_cell(f"{name} = {n}", store_history=True)
            with capture_output():
                ip.run_cell_magic("chat", "", "what now?")
    finally:
        for name in made:
            ip.user_ns.pop(name, None)
    sent = "\n".join(str(m.get("content") or "") for m in model.requests[-1])
    shown = re.findall(r"cell_value_(\d+) = ", sent)
    left_out = re.search(r"\((\d+) earlier cell\(s\) not shown\)", sent)
    carried = len(shown) + (int(left_out.group(1)) if left_out else 0)
    assert shown and int(shown[-1]) == RERUNS - 1  # the newest cell is there
    assert len(set(shown)) == len(shown)  # each once
    assert carried <= 20 < RERUNS  # the log's bound, not one per re-run
    assert sent.count("what now?") == 1  # one exchange: each re-run replaced the last
