"""A notebook's conversation survives a real kernel restart: the kernel learns its notebook
from `JPY_SESSION_NAME` (as Jupyter Server sets it), and after the restart the first chat
continues the conversation that notebook had."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.reliability.test_kernel_interrupt import STARTED_S, run

pytestmark = pytest.mark.real
jupyter_client = pytest.importorskip("jupyter_client")

SETUP = textwrap.dedent("""
    %load_ext nbagent
    import nbagent
    from nbagent.testing import ScriptedModel
    agent = nbagent.current(model=ScriptedModel(default={reply!r}))
""")
USERS = "print('users:', [m['content'] for m in nbagent.current().history if m['role'] == 'user'])"


def test_a_restarted_kernel_continues_its_notebooks_conversation(tmp_path: Path) -> None:
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    env = {**os.environ, "NBAGENT_DATA_DIR": str(tmp_path / "data"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "JPY_SESSION_NAME": "analysis/sales.ipynb",
           "NBAGENT_MODEL": "openai/gpt-4o-mini"}  # no embedded server for this test
    manager.start_kernel(env=env, cwd=str(tmp_path))
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=STARTED_S)
        for code in (SETUP.format(reply="noted"), "%%chat\nLoad sales.csv into sales_df"):
            status, texts, errors = run(client, code)
            assert (status, errors) == ("ok", ""), texts
        manager.restart_kernel(now=True)
        client.wait_for_ready(timeout=STARTED_S)
        status, texts, errors = run(client, SETUP.format(reply="welcome back"))
        assert (status, errors) == ("ok", ""), texts
        status, texts, errors = run(client, "%%chat\nwhat did I load?")
        shown = "\n".join(texts)
        assert (status, errors) == ("ok", ""), shown
        assert "continuing this notebook's conversation" in shown, shown
        assert "welcome back" in shown
        status, texts, errors = run(client, USERS)
        assert "users: ['Load sales.csv into sales_df', 'what did I load?']" in "".join(texts)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
