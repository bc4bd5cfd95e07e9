"""Redaction at rest (`nbagent.agent.archive._redact`): every secret format in the corpus is
removed, once and for all, wherever it sits in a record; secret environment values by value,
as whole tokens; ordinary text comes back byte-identical; JSON stays JSON; keys, roles and ids
never change; redacted archives still resume and recall. Each row's own span: test_shapes."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, tool, validate_messages
from nbagent.agent.archive import (
    REDACTED,
    Archive,
    find_secrets,
    looks_secret,
    recall,
    redact,
    redact_value,
    replay,
    secret_env_values,
)
from nbagent.testing import ScriptedModel, calls, reply
from tests.agent.archive.secrets_corpus import DATA, NO_ENV, SECRETS, secret_id


def ordinary_corpus() -> dict[str, str]:
    """Hand-written ordinary text, and generated UUIDs, git hashes and image data."""
    blocks = (DATA / "ordinary.txt").read_text().split("\n%%%%\n")
    corpus = {f"ordinary.txt #{n}": block for n, block in enumerate(blocks)}
    rng = random.Random(12)
    corpus["UUIDs"] = "\n".join(str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(500))
    corpus["git log"] = "\n".join(
        f"commit {hashlib.sha1(str(n).encode()).hexdigest()}\nAuthor: Ana <ana@example.com>\n\n"
        f"    fix the risk-adjusted calc (#{n})\n" for n in range(300))
    corpus["sha256 sums"] = "\n".join(
        f"{hashlib.sha256(str(n).encode()).hexdigest()}  data/part-{n:05d}.parquet"
        for n in range(300))
    image = base64.b64encode(rng.randbytes(300_000)).decode()
    corpus["base64 image, data URI"] = f'<img src="data:image/png;base64,{image}" alt="plot">'
    corpus["base64 image, bare"] = image
    corpus["base64 image in JSON"] = json.dumps({"image/png": image, "text/plain": "<Figure>"})
    corpus["base64url bytes"] = base64.urlsafe_b64encode(rng.randbytes(300_000)).decode()
    return corpus


ORDINARY = ordinary_corpus()


# -- the secrets corpus: every format, redacted once and for all -----------------------------

@pytest.mark.parametrize("entry", SECRETS, ids=secret_id)
def test_redaction_is_idempotent(entry: dict[str, str]) -> None:
    once = redact(entry["text"], NO_ENV)
    assert redact(once, NO_ENV) == once


def test_secret_environment_variables_are_redacted_by_value() -> None:
    environ = {"MY_SERVICE_TOKEN": "q8Zt2Lx9-Vw4Mn7Bc", "DB_PASSWORD": 'pa"ss w0rd',
               "WAREHOUSE_SECRET": "short", "PASSWORD_STORE_DIR": "/home/me/.password-store",
               "TOKENIZERS_PARALLELISM": "false", "PWD": "/home/me/project",
               "GPG_KEY_ID": "1234567890", "HOME": "/home/me/q8Zt2Lx9"}
    assert secret_env_values(environ) == ["q8Zt2Lx9-Vw4Mn7Bc"]  # spaces: not a value to chase
    assert redact("token is q8Zt2Lx9-Vw4Mn7Bc.", environ) == "token is [redacted]."
    assert redact("short /home/me/.password-store false 1234567890", environ) == \
        "short /home/me/.password-store false 1234567890"


def test_a_secret_inside_escaped_json_is_still_found() -> None:
    environ = {"SERVICE_API_KEY": 'Zq9"xW2/vB7nM4'}
    arguments = json.dumps({"header": f'key {environ["SERVICE_API_KEY"]} end'})
    assert '\\"' in arguments  # the raw JSON text holds the value escaped
    cleaned = redact(arguments, environ)
    assert json.loads(cleaned) == {"header": "key [redacted] end"}


# -- the ordinary corpus: byte-identical ------------------------------------------------------

@pytest.mark.parametrize("name", list(ORDINARY))
def test_ordinary_text_comes_back_byte_identical(name: str) -> None:
    text = ORDINARY[name]
    assert find_secrets(text) == [] or redact(text, NO_ENV) == text
    assert redact(text, NO_ENV) == text


# -- structure is kept -------------------------------------------------------------------------

def test_redacted_tool_arguments_stay_valid_json_with_the_same_keys() -> None:
    arguments = json.dumps({"api_key": "demo-key-12345678", "path": "new-york-city-taxi.csv",
                            "nested": {"dsn": "postgresql://etl:s3cret-Pa55@db/sales"},
                            "list": ["Bearer abcdefgh12345678", 3]})
    cleaned = json.loads(redact(arguments, NO_ENV))
    assert cleaned == {"api_key": REDACTED, "path": "new-york-city-taxi.csv",
                       "nested": {"dsn": f"postgresql://etl:{REDACTED}@db/sales"},
                       "list": [f"Bearer {REDACTED}", 3]}


def test_a_json_text_keeps_its_formatting_when_the_span_edit_is_safe() -> None:
    text = '{"model":"gpt-4o",   "api_key":"demo-key-12345678"}'
    assert redact(text, NO_ENV) == '{"model":"gpt-4o",   "api_key":"[redacted]"}'


def test_a_pem_key_inside_json_leaves_valid_json() -> None:
    pem = next(e for e in SECRETS if e["format"] == "PEM private key")
    text = json.dumps({"content": pem["text"], "path": "id_rsa"})
    cleaned = json.loads(redact(text, NO_ENV))
    assert cleaned["content"] == pem["text"].replace(pem["secret"], REDACTED)


def test_absurd_nesting_and_non_json_brackets_do_not_raise() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    assert redact(deep, NO_ENV) == deep
    assert redact("[not json] password=hunter2;", NO_ENV) == "[not json] password=[redacted];"


def test_redact_value_returns_a_copy_and_leaves_the_live_message_alone() -> None:
    message = {"role": "user", "content": "key sk-test-0123456789abcdefghijklmn"}
    before = json.dumps(message)
    cleaned = redact_value(message, NO_ENV)
    assert cleaned == {"role": "user", "content": f"key {REDACTED}"}
    assert json.dumps(message) == before


# -- through the archive: every place, and resume and recall still work ------------------------

def write_everywhere(archive: Archive, text: str, secret: str) -> list[dict[str, Any]]:
    """The text as a model name, a user message, tool arguments, a tool
    result, a full output and a decision."""
    archive.write_session(f"openai/{text}", archive.session_id)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": f"please look: {text}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call-1", "type": "function", "function": {
                "name": "lookup", "arguments": json.dumps({"query": text, "api_key": secret,
                                                           "page": 2})}}]},
        {"role": "tool", "tool_call_id": "call-1", "content": f"result for {text}"},
        {"role": "assistant", "content": "done looking"},
    ]
    for message in messages:
        archive.write_message(message)
    archive.write_output("call-1", f"full output {text}")
    archive.write_decision({"action": "none", "reason": text, "failures": 0})
    return messages


def exposed(secret: str, raw: str) -> bool:
    escaped = json.dumps(secret)[1:-1]
    return secret in raw or escaped in raw or secret.replace("\n", "\\n") in raw


@pytest.mark.parametrize("entry", SECRETS, ids=secret_id)
def test_no_format_reaches_the_disk_in_clear_and_the_archive_still_resumes(
        entry: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    with Archive.at(path) as archive:
        written = write_everywhere(archive, entry["text"], entry["secret"])
    raw = path.read_text(encoding="utf-8")
    assert not exposed(entry["secret"], raw)
    back = replay(path)
    validate_messages(back.messages)
    assert [m["role"] for m in back.messages] == [m["role"] for m in written]
    arguments = json.loads(back.messages[2]["tool_calls"][0]["function"]["arguments"])
    assert arguments["page"] == 2 and arguments["api_key"] == REDACTED
    assert back.model is not None and not exposed(entry["secret"], back.model)
    assert "done looking" in recall(path, "done looking")
    assert "#1 user: please look:" in recall(path, "please look")


def test_the_ordinary_corpus_survives_the_archive_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "ordinary.jsonl"
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    for n, text in enumerate(ORDINARY.values()):
        messages += [
            {"role": "user", "content": text},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{n}", "type": "function",
                 "function": {"name": "read_file", "arguments": json.dumps({"path": text})}}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": text},
        ]
    with Archive.at(path) as archive:
        for message in messages:
            archive.write_message(message)
    assert replay(path).messages == messages


def test_a_session_whose_tool_arguments_held_an_api_key_resumes_and_chats() -> None:
    @tool
    def fetch(url: str, api_key: str) -> str:
        """Fetch a URL."""
        return f"fetched {url}"

    model = ScriptedModel([calls(("fetch", {"url": "https://example.com/data.csv",
                                            "api_key": "demo-key-12345678"})), reply("got it")])
    agent = Agent(model=model, tools=[fetch], namespace={})
    agent.chat("fetch the data")
    agent.session.close()
    resumed = Agent.resume(agent.session_id, model=ScriptedModel([reply("still here")]),
                           namespace={}, tools=[fetch])
    assert resumed.chat("where were we?").text == "still here"
    arguments = resumed.history.messages[2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"url": "https://example.com/data.csv", "api_key": REDACTED}


# -- environment values: by shape and certainty, whole tokens, never structure -----------------

COINCIDENCES = {"POSTGRES_PASSWORD": "postgres", "PARTITION_KEY": "customer_id",
                "DEFAULT_ROLE_TOKEN": "assistant", "USER_SECRET": "user", "TOOL_KEY": "tool",
                "BUCKET_KEY": "reports-2024-final", "DB_PASSWORD": "Summer2024",
                "SERVICE_TOKEN": "localhost:8888", "FUNCTION_SECRET": "function",
                "MAIN_KEY": "main", "SYSTEM_PASSWORD": "system", "CALL_TOKEN": "call_1"}


@pytest.mark.parametrize("name", list(ORDINARY))
def test_words_that_equal_a_secret_named_variable_are_not_redacted(name: str) -> None:
    assert secret_env_values(COINCIDENCES) == []
    assert redact(ORDINARY[name], COINCIDENCES) == ORDINARY[name]


def test_the_issue_s_message_comes_back_whole_and_its_roles_too(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                ) -> None:
    for variable, value in COINCIDENCES.items():
        monkeypatch.setenv(variable, value)
    text = ("Load the orders table from postgres (postgresql://localhost/shop) and group by "
            "customer_id")
    agent = Agent(model=ScriptedModel([reply("grouped by customer_id")]), namespace={},
                  builtin_tools=False)
    agent.chat(text)
    agent.session.close()
    back = replay(agent.session.archive.path)  # type: ignore[union-attr]
    assert back.messages == agent.history.messages  # nothing altered, roles included
    resumed = Agent.resume(agent.session_id, model=ScriptedModel([reply("ok")]), namespace={})
    assert resumed.history.messages[1]["content"] == text
    resumed.session.close()


@pytest.mark.parametrize(("value", "secret"), [
    ("q8Zt2Lx9-Vw4Mn7Bc", True), ("0c03490ba324909ffc5be3a2827c1ac9", True),
    ("Zq9xW2vB7nM4kP1s", True), ("postgres", False), ("customer_id", False),
    ("assistant", False), ("reports-2024-final", False), ("Summer2024", False),
    ("new-york-city-taxi.csv", False), ("2024-01-01T00:00:00", False),
    ("/home/me/.ssh/id_rsa", False), ("localhost:8888", False), ("${API_KEY}", False),
    ("1234567890123", False), ("PARTITION_BY_CUSTOMER", False)])
def test_a_value_is_a_secret_by_its_shape(value: str, secret: bool) -> None:
    assert looks_secret(value) is secret


def test_an_environment_secret_is_redacted_only_as_a_whole_token() -> None:
    environ = {"MY_SERVICE_TOKEN": "q8Zt2Lx9-Vw4Mn7Bc"}
    assert redact("use q8Zt2Lx9-Vw4Mn7Bc, not xq8Zt2Lx9-Vw4Mn7Bc9", environ) == \
        "use [redacted], not xq8Zt2Lx9-Vw4Mn7Bc9"


def test_keys_roles_and_ids_are_structure_and_never_change() -> None:
    environ = {"CALL_TOKEN": "call8Zt2Lx9Vw4Mn7Bc"}
    message = {"role": "tool", "tool_call_id": "call8Zt2Lx9Vw4Mn7Bc",
               "content": "id call8Zt2Lx9Vw4Mn7Bc", "call8Zt2Lx9Vw4Mn7Bc": 1}
    assert redact_value(message, environ) == {
        "role": "tool", "tool_call_id": "call8Zt2Lx9Vw4Mn7Bc", "content": "id [redacted]",
        "call8Zt2Lx9Vw4Mn7Bc": 1}


