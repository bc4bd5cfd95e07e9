"""The notebook context as notes in the history, on the loop's real path for a provider that
caches prompts: a `LiteLLMModel` (so the loop plans the cache and takes notes) whose
`send` answers from a script instead of the network. What litellm then builds from these
messages is tested against a stub server in tests/real/test_cache_bodies.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nbagent import Completion, LiteLLMModel, Settings
from nbagent.testing import NOTE_HEADER, ProviderError, is_note
from tests.helpers import add, make_agent


@dataclass
class Sent(LiteLLMModel):
    """Anthropic by name; each request is recorded and answered from `script` (an
    exception is raised, a dict is the assistant message)."""

    script: list[Any] = field(default_factory=list)
    requests: list[list[dict[str, Any]]] = field(default_factory=list)

    def send(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
             on_text: Any, tool_choice: Any = None, plan: Any = None) -> Completion:
        self.requests.append([dict(m) for m in messages])
        step = self.script.pop(0) if self.script else {"role": "assistant", "content": "ok"}
        if isinstance(step, Exception):
            raise step
        return Completion(step)


def call(name: str, arguments: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{len(arguments)}", "type": "function",
         "function": {"name": name, "arguments": arguments}}]}


def test_a_note_follows_the_question_and_a_tool_that_changed_the_variables() -> None:
    namespace: dict[str, Any] = {"rows": 10}
    model = Sent("anthropic/claude-sonnet-4-5", script=[
        call("add", '{"a": 1, "b": 2}'), call("add", '{"a": 2, "b": 2}'),
        {"role": "assistant", "content": "3 and 4"}])
    agent, _ = make_agent(model, tools=[add], namespace=namespace)
    agent.chat("add things")
    first, second, third = model.requests
    assert first[-2] == {"role": "user", "content": "add things"}  # the user's own text
    assert is_note(first[-1]) and "rows: int = 10" in first[-1]["content"]
    assert second[:len(first)] == first and not is_note(second[-1])  # unchanged: no note
    namespace["total"] = 3  # as the python tool would leave it
    agent.chat("and now?")
    fourth = model.requests[-1]
    assert fourth[:len(third)] == third  # nothing sent before is edited
    assert is_note(fourth[-1]) and "total: int = 3" in fourth[-1]["content"]
    assert sum(map(is_note, agent.history)) == 2


def test_a_note_dropped_by_the_overflow_recovery_is_sent_again() -> None:
    model = Sent("anthropic/claude-sonnet-4-5", script=[
        {"role": "assistant", "content": "first"},
        ProviderError(400, "prompt is too long: 250000 tokens > 200000 maximum"),
        {"role": "assistant", "content": "second"}])
    agent, _ = make_agent(model, namespace={"rows": 10})
    agent.chat("one " * 50)
    agent.chat("two")
    retried = model.requests[-1]
    assert [m["content"] for m in retried if m["role"] == "user" and not is_note(m)][-1] \
        == "two"
    assert sum(map(is_note, retried)) == 1 and retried[-1]["content"].startswith(NOTE_HEADER)


def test_without_the_setting_no_note_is_written() -> None:
    model = Sent("anthropic/claude-sonnet-4-5")
    agent, _ = make_agent(model, namespace={"rows": 10},
                          settings=Settings(max_context_tokens=200_000, notebook_context=False))
    agent.chat("hello")
    assert not any(map(is_note, model.requests[0])) and "rows" not in str(model.requests)
