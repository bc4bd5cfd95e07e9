"""Session state has one owner (`_session`): only the session writes its cost, billing, cache
marks and learned window (others call `bill`, `mark_cache`, `learn_window`), what the loop
bills adds up as the provider reported it, and a cell run again replaces its exchange."""

from __future__ import annotations

import ast
from pathlib import Path

import nbagent
from nbagent import Usage
from nbagent.testing import ScriptedModel, reply
from tests.helpers import make_agent

PACKAGE = Path(nbagent.__file__).parent
OWNED = {"cost", "billing", "cache_marks", "learned_window", "pins"}


def test_only_the_session_writes_its_state() -> None:
    writes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_session.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in OWNED and \
                        "session" in ast.unparse(target.value):
                    writes.append(f"{path.relative_to(PACKAGE)}:{node.lineno} "
                                  f"{ast.unparse(target)}")
    assert writes == []


def test_a_turn_bills_what_the_provider_reported() -> None:
    usage = Usage(input_tokens=120, output_tokens=8)
    agent = nbagent.Agent(model=ScriptedModel([reply("one", usage=usage, cost=0.25),
                                               reply("two", usage=usage, cost=0.5)]),
                          builtin_tools=False, archive=False, namespace={})
    agent.chat("first")
    agent.chat("second")
    billing = agent.session.billing
    assert agent.session.cost == 0.75 and billing.requests == 2
    assert billing.output_tokens == 16 and billing.prompt_tokens == 240


def test_a_rerun_cell_says_it_replaced_its_exchange() -> None:
    agent, _ = make_agent(ScriptedModel([reply("first"), reply("second"), reply("other")]))
    assert agent.chat("what is df?", exchange="cell-1").replaced is False
    assert agent.chat("what is df, really?", exchange="cell-1").replaced is True
    assert agent.chat("and this?", exchange="cell-2").replaced is False


def test_running_the_same_exchange_again_replaces_it() -> None:
    agent, _ = make_agent(ScriptedModel([reply("first"), reply("other"), reply("second")]))
    agent.chat("what is df?", exchange="cell-1")
    agent.chat("something else", exchange="cell-2")
    agent.chat("what is df, really?", exchange="cell-1")
    users = [m["content"] for m in agent.history if m["role"] == "user"]
    assert users == ["something else", "what is df, really?"]
    assert [m["content"] for m in agent.history if m["role"] == "assistant"] == ["other", "second"]
