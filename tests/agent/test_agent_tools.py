"""What an agent offers from its namespace (`_agent_tools`): cell references (`In[n]`,
`Err[n]`, `{name}`) expanded from it, and the notebook context sent with a question, which
never carries a secret (by its name or its shape)."""

from __future__ import annotations

from nbagent.testing import ScriptedModel, reply
from tests.helpers import make_agent


def test_cell_references_expand_from_the_namespace() -> None:
    agent, _ = make_agent(ScriptedModel(), namespace={
        "target": "churn_30d", "In": ["", "df = load()"], "Out": {1: "ok"}})
    text = agent.expand_references("model {target}; explain In[1] and Err[1]",
                                   errors={1: "KeyError: 'churn'"})
    assert text.startswith("model churn_30d; explain In[1] and Err[1]")
    assert "df = load()" in text and "KeyError: 'churn'" in text


def test_the_notebook_context_never_carries_a_secret() -> None:
    model = ScriptedModel([reply("ok")])
    agent, _ = make_agent(model, namespace={
        "openai_key": "not-shaped-like-a-key-but-named-one",
        "note": "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "rows": 10})
    agent.chat("what do I have?")
    sent = model.requests[0][-1]["content"]
    assert "rows: int = 10" in sent and "openai_key" in sent
    assert "not-shaped-like-a-key" not in sent and "abcdefghijklmnopqrstuvwxyz0123" not in sent
