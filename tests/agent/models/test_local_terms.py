"""What a summary costs each model, as the agent's summarizer carries it to the ladder:
a model served on this machine states a bar and one bounded call per compaction; a cloud
model states nothing (its calls are made as they always were)."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")

from nbagent import Agent  # noqa: E402
from nbagent.engine import FREE, SummaryCost, summary_cost  # noqa: E402
from nbagent.local import SUMMARY_TOKENS, LocalModel, prompt_counter  # noqa: E402


def served(max_output: int = 512) -> LocalModel:
    return LocalModel("openai/smollm2", api_base="http://127.0.0.1:9", api_key="local-no-key",
                      options={"max_tokens": max_output}, context_window=2048,
                      max_output=max_output, counter=prompt_counter())


def test_a_local_models_summaries_cost_one_bounded_call_that_must_free_enough() -> None:
    agent = Agent(model=served(), archive=False, namespace={})
    cost = summary_cost(agent.controller.summarize)
    assert cost == SummaryCost(min_saving=0.15, max_calls=1, output_tokens=SUMMARY_TOKENS)
    bounded = served().for_summaries()
    assert bounded.options["max_tokens"] == bounded.max_output == SUMMARY_TOKENS
    assert served(max_output=100).for_summaries().options["max_tokens"] == 100  # never more


def test_the_embedded_model_states_the_same_before_its_server_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_MODEL", raising=False)
    agent = Agent(settings={"local_n_ctx": 2048}, archive=False, namespace={})
    assert agent.model.name == "local/smollm2"
    cost = summary_cost(agent.controller.summarize)
    assert cost.max_calls == 1
    assert agent.model.running is None  # asking started nothing


def test_a_cloud_model_states_no_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    agent = Agent(model="openai/gpt-4o", archive=False, namespace={})
    assert summary_cost(agent.controller.summarize) is FREE  # as the ladder reads it: FREE


def test_every_built_in_is_shown_to_the_bundled_model_only_when_a_turn_names_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent tells a model that hides the built-ins (the bundled one says so) which
    tools they are, from the table: a new row (a function and its row, nothing else) is
    hidden too; the user's own tools are shown; a model that does not hide them is told
    nothing."""
    from nbagent.agent.tools import BUILTIN_TOOLS, BuiltinTool, ToolContext

    def peek_rows(context: ToolContext) -> str:
        """Count the rows of every DataFrame."""
        return "0"

    monkeypatch.setitem(BUILTIN_TOOLS, "peek_rows", BuiltinTool(peek_rows))
    model = served()
    model.hides_builtins = True  # as the server's bundled model is made
    Agent(model=model, archive=False, namespace={})
    assert model.skips == frozenset(BUILTIN_TOOLS) and "peek_rows" in model.skips
    tools = [{"type": "function", "function": {"name": name, "parameters": {}}}
             for name in ("list_variables", "run_code", "peek_rows", "column_mean")]

    def shown(text: str, choice: object = None) -> list[str]:
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": text}]
        return [t["function"]["name"]
                for t in model.offered(tools, messages, choice)]  # type: ignore[arg-type]

    assert shown("Which columns does trips have?") == ["column_mean"]  # the user's own tool
    assert shown("Use run_code to compute the mean fare") == ["run_code", "column_mean"]
    assert shown("peek_rows of trips, please") == ["peek_rows", "column_mean"]
    forced = {"type": "function", "function": {"name": "list_variables"}}
    assert shown("hi", forced) == ["list_variables", "column_mean"]
    assert model.tool_prompt(tools) == model.tool_prompt(tools[3:])  # what %context counts
    other = served()  # a GGUF of the user's: shown every tool
    Agent(model=other, archive=False, namespace={})
    assert other.skips == frozenset() and len(other.offered(tools)) == 4


def test_the_embedded_model_passes_the_built_ins_to_the_model_its_server_serves(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from nbagent.agent.tools import BUILTIN_TOOLS

    for name in ("NBAGENT_MODEL", "NBAGENT_LOCAL_MODEL_PATH"):
        monkeypatch.delenv(name, raising=False)
    agent = Agent(settings={"local_n_ctx": 2048}, archive=False, namespace={})
    embedded = agent.model
    assert embedded.hides_builtins and embedded.skips == frozenset(BUILTIN_TOOLS)
    bundled = served()
    bundled.hides_builtins = True
    monkeypatch.setattr(embedded, "_serve", lambda: bundled)  # no server: its model
    assert embedded.started() is bundled and bundled.skips == frozenset(BUILTIN_TOOLS)
    gguf = Agent(settings={"local_n_ctx": 2048, "local_model_path": "/x/mine.gguf"},
                 archive=False, namespace={}).model
    assert not gguf.hides_builtins and gguf.skips == frozenset()


def test_small_model_skips_is_deprecated_and_is_the_tables_names() -> None:
    import nbagent.local
    from nbagent.agent.tools import BUILTIN_TOOLS

    with pytest.deprecated_call():
        assert nbagent.local.SMALL_MODEL_SKIPS == frozenset(BUILTIN_TOOLS)
    assert "SMALL_MODEL_SKIPS" not in nbagent.local.__all__
