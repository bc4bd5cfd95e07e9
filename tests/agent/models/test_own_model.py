"""Bring your own model class: the example of docs/models.md, run exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).parents[3] / "docs" / "models.md"


def example() -> str:
    """The Python block under "Bring your own model class" in docs/models.md."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Bring your own model class"):]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]


def test_the_docs_example_model_chats_and_calls_a_tool_end_to_end() -> None:
    namespace: dict[str, object] = {"__name__": "example"}
    exec(compile(example(), str(DOC), "exec"), namespace)
    agent, result = namespace["agent"], namespace["result"]
    assert str(result.text) == "You said: What is 2 + 3? (the tool said 5)"  # type: ignore[attr-defined]
    roles = [m["role"] for m in agent.history]  # type: ignore[attr-defined]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert agent.history[3]["content"] == "5"  # the real tool ran on the model's call  # type: ignore[attr-defined]
    assert agent.context_state().tokens > 0  # type: ignore[attr-defined]
