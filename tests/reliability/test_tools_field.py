"""The tools in the field, through a real chat: a multi-megabyte one-line file, Jupyter
started from the home folder, password-like variables, tools that fail in every way a
BaseException can, tables returned by tools, code proposed for a cell. Each test reads
what the provider was actually sent (`ScriptedModel.requests`)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, Settings, tool
from nbagent.testing import ScriptedModel, calls, reply


def agent_with(model: ScriptedModel, **options: Any) -> Agent:
    options.setdefault("namespace", {})
    return Agent(model=model, archive=False, settings=Settings(max_context_tokens=200_000),
                 **options)


def results(agent: Agent) -> list[str]:
    return [m["content"] for m in agent.history if m["role"] == "tool"]


def test_a_one_line_json_of_megabytes_arrives_as_pages(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rows = [{"id": n, "city": "Zürich", "sales": n * 1.5} for n in range(70_000)]
    (tmp_path / "rows.json").write_text(json.dumps(rows))  # ~3.5 MB, no newline
    size = (tmp_path / "rows.json").stat().st_size
    model = ScriptedModel([calls(("read_file", {"path": "rows.json"})), reply("first page"),
                           calls(("read_file", {"path": "rows.json", "start": 15_000})),
                           reply("second page")])
    agent = agent_with(model)
    agent.chat("what is in rows.json?")
    agent.chat("read on")
    first, second = results(agent)
    for page in (first, second):
        assert len(page) <= 16_300 and len(page.encode()) <= 32_300
    assert first.startswith("[lines 0–0 of 1; line 0 goes on: read_file(path='rows.json', "
                            "offset=0, start=")
    assert second.startswith("[line 0 from byte 15,000 to line 0 of 1; line 0 goes on: ")
    assert size > 3_000_000 and all(len(json.dumps(r)) < 60_000 for r in model.requests)


@pytest.fixture
def jupyter_from_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Jupyter started from `~`: the home folder is the working directory."""
    home = tmp_path / "home"
    files = {
        ".local/share/jupyter/runtime/jpserver-4242.json": '{"token": "jupyter-token-LEAKED"}',
        ".local/share/jupyter/runtime/kernel-abc.json": '{"key": "hmac-key-LEAKED"}',
        ".bash_history": "export OPENAI_API_KEY=sk-history-LEAKED",
        ".aws/credentials": "aws_secret_access_key = aws-secret-LEAKED",
        ".local/share/nbagent/sessions/other.jsonl": '{"content": "other-session-LEAKED"}',
        ".config/gh/hosts.yml": "oauth_token: gh-token-LEAKED",
        "sales.csv": "region,revenue\nnorth,10\n",
    }
    for name, text in files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text + "\n")
    (tmp_path / "id_rsa").write_text("KEY-LEAKED\n")
    os.link(tmp_path / "id_rsa", home / "notes.txt")  # a hard link to a key elsewhere
    for name in ("JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR",
                 "XDG_DATA_HOME", "NBAGENT_DATA_DIR", "NBAGENT_READ_ROOTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    return home


def test_jupyter_started_from_home_exposes_no_token_key_or_history(
        jupyter_from_home: Path) -> None:
    asked = [".local/share/jupyter/runtime/jpserver-4242.json",
             "~/.local/share/jupyter/runtime/kernel-abc.json", ".bash_history",
             str(jupyter_from_home / ".aws" / "credentials"),
             ".local/share/nbagent/sessions/other.jsonl", ".config/gh/hosts.yml", "notes.txt",
             "sales.csv"]
    model = ScriptedModel([calls(*[("read_file", {"path": path}) for path in asked]),
                           reply("done")])
    agent = agent_with(model)
    agent.chat("read my files")
    *refused, sales = results(agent)
    assert all(r.startswith("Refused: ") for r in refused), refused
    assert sales.startswith("[lines 0–") and "\nregion,revenue\nnorth,10" in sales
    assert "LEAKED" not in json.dumps(model.requests)


def test_password_like_variables_never_reach_the_provider() -> None:
    jwt = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
           "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
    namespace = {"db_pass": "postgres-pass-4242", "smtp_pw": "smtp-4242", "apiKey": "k-4242",
                 "PASSPHRASE": "correct horse 4242", "user_pin": 4242,
                 "auth_header": "Bearer " + jwt, "keyboard": "qwerty", "rows": 10}
    model = ScriptedModel([calls(("describe_variable", {"name": "db_pass"})), reply("ok")])
    agent = agent_with(model, namespace=namespace)
    agent.chat("what do I have?")
    sent = json.dumps(model.requests)
    assert "4242" not in sent and jwt[:20] not in sent and jwt[-20:] not in sent
    assert "keyboard: str = 'qwerty'" in model.requests[0][-1]["content"]
    assert "db_pass: str (hidden" in model.requests[0][-1]["content"]


class OwnStop(BaseException):
    pass


class Unshowable:
    def __str__(self) -> str:
        raise asyncio.CancelledError()

    __repr__ = __str__


def test_no_tool_failure_ends_the_chat() -> None:
    @tool
    def cancelled() -> str:
        """Raises CancelledError."""
        raise asyncio.CancelledError("the task was cancelled")

    @tool
    def own_stop() -> str:
        """Raises a BaseException of its own."""
        raise OwnStop("stop")

    @tool
    def unshowable() -> Any:
        """Returns a value whose str raises CancelledError."""
        return Unshowable()

    @tool
    def slow_database() -> str:
        """Its own client times out."""
        raise TimeoutError("the warehouse did not answer in 30 s")

    model = ScriptedModel([calls(("cancelled", {}), ("own_stop", {}), ("unshowable", {}),
                                 ("slow_database", {})), reply("I will work around them."),
                           reply("yes")])
    agent = agent_with(model, tools=[cancelled, own_stop, unshowable, slow_database])
    assert agent.chat("try them").text == "I will work around them."
    assert results(agent) == [
        "Error: cancelled raised CancelledError: the task was cancelled",
        "Error: own_stop raised OwnStop: stop",
        "Error: unshowable returned a Unshowable that cannot be shown as text "
        "(CancelledError: ).",
        "Error: slow_database raised TimeoutError: the warehouse did not answer in 30 s",
    ]
    assert agent.chat("and now?").text == "yes"  # the session goes on


def test_a_dataframe_from_a_tool_reaches_the_provider_as_a_table() -> None:
    import pandas as pd

    @tool
    def by_region() -> Any:
        """Revenue by region."""
        return pd.DataFrame({"region": ["north", "south"], "revenue": [10.5, 7.25]})

    model = ScriptedModel([calls(("by_region", {})), reply("north leads")])
    agent = agent_with(model, tools=[by_region])
    agent.chat("which region leads?")
    sent = model.requests[-1][-1] if model.requests[-1][-1]["role"] == "tool" else next(
        m for m in model.requests[-1] if m["role"] == "tool")
    assert sent["content"].splitlines() == ["DataFrame, 2 rows x 2 columns:",
                                            "  region  revenue", "0  north    10.50",
                                            "1  south     7.25"]


def test_code_proposed_by_the_model_is_announced_for_one_cell_and_never_run() -> None:
    from nbagent.events import CellProposed

    namespace: dict[str, Any] = {}
    model = ScriptedModel([calls(("propose_cell", {"code": "ran = 1"}),
                                 ("propose_cell", {"code": "ran = 2"})), reply("see below")])
    agent = agent_with(model, namespace=namespace)
    cells: list[str] = []
    agent.events.subscribe(lambda e: cells.append(e.code) if isinstance(e, CellProposed)
                           else None)
    agent.chat("write the code")
    assert cells == ["ran = 1", "ran = 1\n\nran = 2"] and namespace == {}
