"""The embedded server `%load_ext nbagent` warm-starts is ended when the next cell chooses
another model, whichever way it is chosen (issue 40 item 3: started only when the embedded
model answers): in a real kernel, after the load cell's warm start has begun its server,
each way of changing the model the kernel's agent uses lets it go, and the shared server
process ends — none idles until the kernel does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.helpers import started_kernel
from tests.real.test_shared_server import WAIT_S, poll, run, servers

# its kernels start the embedded server: it runs in the llama group, never beside another
pytestmark = [pytest.mark.real, pytest.mark.llama]
pytest.importorskip("jupyter_client")

OTHER = "openai/gpt-4o-mini"  # chosen, never called: no request is sent
# a session archived before the load, for the resume
EARLIER = ("import nbagent\n"
           "from nbagent.testing import ScriptedModel, reply\n"
           "earlier = nbagent.Agent(model=ScriptedModel(default=reply('hi')), namespace={},\n"
           "                        session_id='earlier')\n"
           "earlier.chat('hello')\n"
           "earlier.close()")
# each way is its own kernel and server start (~19 s): the real path is proven on two that
# replace the current agent by different routes (the magic's new session, a resume); every
# way of choosing a model is checked against the release in tests/agent/test_embedded_released.py
WAYS = {
    "%chat --new --model": f"%chat --new --model {OTHER}",
    "a resume": f"nbagent.current(resume='earlier', model={OTHER!r})",
}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_the_warm_started_server_ends_when_the_next_cell_chooses_another_model(
        way: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NBAGENT_", "OPENAI_"))}
    env.update(NBAGENT_DATA_DIR=str(data), NBAGENT_LOCAL_N_CTX="2048",
               LITELLM_LOCAL_MODEL_COST_MAP="True", OPENAI_API_KEY="sk-never-sent")
    folder = tmp_path / "kernel"
    folder.mkdir()
    with started_kernel(folder, env, timeout=WAIT_S) as (_, client):
        if way == "a resume":
            run(client, EARLIER)
        run(client, "%load_ext nbagent")  # the warm start, once the load cell has run
        poll(lambda: servers(data), "the embedded server started by the load")
        shown = run(client, WAYS[way])
        assert "error" not in shown.lower(), shown
        model: Any = run(client, "print(nbagent.current().model.name)").split()[-1]
        assert model == OTHER
        poll(lambda: not servers(data), f"the server ended after {way}", 60)
