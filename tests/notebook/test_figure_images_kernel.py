"""A figure the model's code makes in a real python3 kernel (the inline backend, the
notebook's runner) reaches a model that reads images as the same PNG the chat cell shows,
in one message after the round's tool result; a model that reads none gets its
description only (ScriptedModel at the llm seam, named as a vision model or not)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from tests.notebook.test_code_runs_kernel import ANALYSIS, run, shown, value
from tests.notebook.test_code_runs_kernel import kernel as kernel  # a turn on the module_kernel

pytestmark = pytest.mark.real

SETUP = textwrap.dedent("""\
    %matplotlib inline
    import json, nbagent
    from nbagent.testing import ScriptedModel, calls, reply
    def scripted(name, *steps):
        model = ScriptedModel(list(steps), name=name)
        agent = nbagent.new_session(model=model, settings=nbagent.Settings(
            max_context_tokens=32_000, run_code="auto"))
        return model, agent
    def urls(messages):
        return [p["image_url"]["url"] for m in messages if isinstance(m.get("content"), list)
                for p in m["content"] if p.get("type") == "image_url"]
    # a scripted session current at the load: it warms no embedded model's server
    nbagent.set_current(nbagent.Agent(model=ScriptedModel(), namespace={}, archive=False))
    %load_ext nbagent
""")


@pytest.mark.parametrize(("name", "images"), [("gpt-4o", 1), ("scripted/model", 0)],
                         ids=["vision", "text-only"])
def test_the_figure_the_cell_shows_is_the_image_the_model_gets(
        kernel: tuple[Any, Any], name: str, images: int) -> None:
    _, client = kernel
    reply, messages = run(client, SETUP)
    assert reply["status"] == "ok", messages
    run(client, f"model, agent = scripted({name!r}, "
                f"calls(('run_code', {{'code': {ANALYSIS!r}, 'explanation': 'chart'}})), "
                "reply('North leads.'))")
    reply, messages = run(client, "%%chat\nchart revenue by region")
    assert reply["status"] == "ok"
    (figure,) = [o for o in shown(messages) if "image/png" in o]
    sent = value(client, "urls(model.requests[1])")
    assert len(sent) == images
    if images:
        assert sent[0] == "data:image/png;base64," + "".join(figure["image/png"].split())
        roles = value(client, "[m['role'] for m in model.requests[1]]")
        assert roles[-3:] == ["assistant", "tool", "user"]
    results = value(client, "[m['content'] for m in agent.history.messages "
                            "if m['role'] == 'tool']")
    assert "Revenue by region" in results[0]  # the description goes either way
