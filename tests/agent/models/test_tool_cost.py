"""What the tools cost in `%context` (`Agent.breakdown().tools`) and in the window's count:
for the embedded model the lean tool list its chat handler really renders into the prompt,
counted by its own tokenizer (or estimated before its server runs); for any other model
their JSON schemas, as before."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("llama_cpp")

from nbagent import Agent, estimate_tokens  # noqa: E402
from nbagent.engine import count_tools_tokens  # noqa: E402
from nbagent.local import LocalModel, prompt_counter  # noqa: E402

BASE = [{"role": "system", "content": "You help."}, {"role": "user", "content": "Hi"}]


def column_mean(column: str, rows: int = 10) -> str:
    """The mean of a column of the table.

    Args:
        column: the column's exact name.
        rows: how many rows to read.
    """
    return column


def served(skips: frozenset[str] = frozenset()) -> LocalModel:
    """The bundled GGUF as the server's model is built, without its server (counting only)."""
    return LocalModel("openai/smollm2", api_base="http://127.0.0.1:9", api_key="local-no-key",
                      context_window=2048, max_output=512, counter=prompt_counter(),
                      skips=skips)


def rendered_tool_text(tools: list[dict[str, object]]) -> str:
    """The text the chat handler adds to a prompt for `tools`: the prompt with them, less
    the same prompt without them (the handler appends its tool list to the system text)."""
    counter = prompt_counter()
    with_tools = counter.render(BASE, tools, "auto")
    without = counter.render(BASE, [], None)
    assert isinstance(with_tools, str) and isinstance(without, str)
    start = 0
    while with_tools[start] == without[start]:
        start += 1
    added = len(with_tools) - len(without)
    assert with_tools[:start] + with_tools[start + added:] == without
    return with_tools[start:start + added]


def test_the_embedded_models_tool_row_is_the_lean_text_its_prompt_carries() -> None:
    model = served(skips=frozenset({"read_file"}))
    agent = Agent(model=model, tools=[column_mean], archive=False, namespace={})
    schemas = agent.tool_schemas()
    offered = [s for s in schemas if s["function"]["name"] != "read_file"]
    assert len(offered) < len(schemas)  # the skipped tool is not shown, nor counted
    lean = rendered_tool_text(offered)
    assert '"column_mean"' in lean and "read_file" not in lean
    assert "the column's exact name" not in lean  # argument descriptions left out
    tools = agent.breakdown().tools
    assert tools == prompt_counter().count_text(lean)
    full = count_tools_tokens(agent.toolbox.schemas(), prompt_counter().count_text)
    assert tools < full / 2  # what %context showed before: every JSON schema


def test_before_its_server_runs_the_embedded_model_counts_the_lean_list_it_will_send(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NBAGENT_MODEL", "NBAGENT_LOCAL_MODEL_PATH"):
        monkeypatch.delenv(name, raising=False)
    agent = Agent(builtin_tools=["list_variables", "python"], tools=[column_mean],
                  archive=False, namespace={})
    bare = Agent(builtin_tools=False, archive=False, namespace={})
    assert agent.model.name == "local/smollm2" and agent.model.running is None
    schemas = agent.tool_schemas()
    # the bundled model is shown the built-ins only when a turn names one; its own tools
    lean = rendered_tool_text([s for s in schemas if s["function"]["name"] == "column_mean"])
    assert '"python"' not in lean and '"list_variables"' not in lean and "column_mean" in lean
    assert agent.breakdown().tools == estimate_tokens(lean)
    # the window's count holds the same tools: the difference a tool-less agent shows
    assert agent.context_state().tokens - bare.context_state().tokens == estimate_tokens(lean)
    assert agent.model.running is None  # counting started no server


def test_a_cloud_models_tool_row_is_still_its_json_schemas() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    agent = Agent(model="openai/gpt-4o", tools=[column_mean], archive=False, namespace={})
    count = agent.session.tracker.count_text or estimate_tokens
    assert agent.breakdown().tools == count_tools_tokens(agent.tool_schemas(), count) > 0
