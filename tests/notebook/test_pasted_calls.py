"""Every call nbagent prints for the user to paste runs as pasted in a fresh shell that
only ran `%load_ext nbagent`: the first notice and the model found beside it, the
`use it:` lines of `%nbagent models`, the lines a notebook's first chat says about its
conversation (continuing, a copy, held elsewhere), and the fixes the errors and stops
name — each as the notebook shows it (`notebook_words`). A call naming `agent.` (the
user's own variable, which a fresh shell has not) or a Python call that does not run
fails here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from nbagent.widgets import _forms, notebook_words

import nbagent
from nbagent.agent import _texts as agent_texts
from nbagent.agent.models import _discovery
from nbagent.engine import _texts as engine_texts
from nbagent.testing import ScriptedModel
from tests.agent.models.helpers import gguf

CALL = re.compile(r"\b(?:nbagent|agent)\.[A-Za-z_][\w.]*\(")
# a magic and the option-like words after it (what follows is the sentence around it)
MAGIC = re.compile(r"%(?:chat|compact|context|pin|nbagent)(?: (?:--?[a-z][\w-]*|[a-z_]+=[^\s,;)]+"
                   r"|\d+|\d{8}-\d{6}-[0-9a-f]{6}|models|reset|meter|cells))*")
PLACEHOLDER = re.compile(r"\bNAME\b|=N\b|\bN\b|\.\.\.|…")

RUN = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "nbagent")
results = []
for code in json.loads(sys.argv[1]):
    result = ip.run_cell(code)
    error = result.error_in_exec or result.error_before_exec
    results.append([code, None if error is None else type(error).__name__, str(error)])
print("RESULTS" + json.dumps(results))
"""


def calls_in(text: str) -> list[str]:
    """The Python calls (balanced parentheses) and magic lines in `text`."""
    found = []
    for match in CALL.finditer(text):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        call = text[match.start():end + 1]
        while end + 2 < len(text) and text[end + 1] == "." and CALL.match(
                "nbagent" + text[end + 1:]):  # a chained call: .use_model(...)
            start, depth = end + 1, 0
            for end in range(text.index("(", start), len(text)):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                if depth == 0:
                    break
            call = text[match.start():end + 1]
        found.append(call)
    found += [m.group(0).strip() for m in MAGIC.finditer(text)]
    return found


@pytest.fixture
def printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text nbagent shows with a call in it, as the notebook shows it."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    gguf(tmp_path / "hub" / "qwen2.5-0.5b-instruct-q4_k_m.gguf", context=32_768)
    server = _discovery.FoundModel("qwen2.5:7b", "Ollama", "ollama_chat/qwen2.5:7b",
                                   "http://127.0.0.1:9", 8192, "server", True)
    monkeypatch.setattr(_discovery, "_found", None)
    found = nbagent.find_local_models(refresh=True)
    monkeypatch.setattr(_discovery, "_found", [server, *found])
    nbagent.set_current(None)
    try:
        notice = nbagent.Agent(namespace={}, archive=False).take_notice() or ""
        kept = nbagent.current(model=ScriptedModel(default="noted"))
        kept.chat("a conversation to continue")
        session = kept.session_id
        kept.close()
    finally:
        nbagent.set_current(None)
    texts = [notice, _forms.models(),
             agent_texts.CONTINUING.format(turns=1, session=session, was=""),
             agent_texts.COPY.format(original="a.ipynb", session=session),
             agent_texts.HELD.format(session=session)]
    from nbagent.engine import PINS_HEADER

    pins = {"role": "system", "content": f"{PINS_HEADER}\n1. the target column is churn_30d"}
    parts = agent_texts.fixed_parts([pins], 1, 10, ["the target column is churn_30d"], len,
                                    lambda i: 10)
    texts += [part.fix for part in parts]
    texts += [value for module in (agent_texts, engine_texts) for value in vars(module).values()
              if isinstance(value, str)]
    texts += [value for value in agent_texts.FAILURES.values()]
    return [notebook_words(text) for text in texts]


@pytest.mark.slow  # a fresh shell imports nbagent and litellm (~10 s)
def test_every_printed_call_runs_as_pasted_after_load_ext(printed: list[str],
                                                          tmp_path: Path) -> None:
    calls = list(dict.fromkeys(c for text in printed for c in calls_in(text)))
    assert not [c for c in calls if c.startswith("agent.")], (
        "a call on `agent`, which a notebook that only ran %load_ext does not have")
    runnable = [c for c in calls if not PLACEHOLDER.search(c) and "{" not in c]
    # what this test must have found, so a change in the texts cannot empty it silently
    assert any(c.startswith("nbagent.current().use_model(nbagent.LiteLLMModel(")
               for c in runnable)
    assert any(c.startswith("nbagent.current().configure(model='local'") for c in runnable)
    assert any(c.startswith("%chat --resume ") for c in runnable)
    assert "%chat --new" in runnable and "%pin --remove 1" in runnable
    assert "%compact --undo" in runnable
    # a pin first: the hint that removes one is shown only when there is one
    runnable.insert(runnable.index("%pin --remove 1"), "%pin the target column is churn_30d")
    done = subprocess.run([sys.executable, "-c", RUN, json.dumps(runnable)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    line = next(li for li in done.stdout.splitlines() if li.startswith("RESULTS"))
    results: list[Any] = json.loads(line.removeprefix("RESULTS"))
    failed = [(code, kind, said) for code, kind, said in results if kind is not None]
    assert failed == [], failed
