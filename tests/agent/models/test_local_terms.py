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


def test_every_built_in_is_shown_to_the_bundled_model_only_when_a_turn_names_it() -> None:
    from nbagent.agent.tools import BUILTIN_TOOLS
    from nbagent.local import SMALL_MODEL_SKIPS

    assert set(BUILTIN_TOOLS) <= SMALL_MODEL_SKIPS  # a new built-in is decided here too
    tools = [{"type": "function", "function": {"name": name, "parameters": {}}}
             for name in ("list_variables", "run_code", "column_mean")]
    model = served()
    model.skips = SMALL_MODEL_SKIPS

    def shown(text: str, choice: object = None) -> list[str]:
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": text}]
        return [t["function"]["name"]
                for t in model.offered(tools, messages, choice)]  # type: ignore[arg-type]

    assert shown("Which columns does trips have?") == ["column_mean"]  # the user's own tool
    assert shown("Use run_code to compute the mean fare") == ["run_code", "column_mean"]
    forced = {"type": "function", "function": {"name": "list_variables"}}
    assert shown("hi", forced) == ["list_variables", "column_mean"]
    assert model.tool_prompt(tools) == model.tool_prompt(tools[2:])  # what %context counts
