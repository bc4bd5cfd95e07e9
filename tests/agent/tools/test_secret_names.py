"""Whether a variable's name says its value is a secret (`nbagent.agent.tools._secret_names`),
by whole name parts: password-like names hide their values in the listing and in
`describe_value`; names that merely contain a secret word keep theirs."""

from __future__ import annotations

import pytest

from nbagent.agent.tools import STATE_TITLE, describe_value, notebook_state


@pytest.mark.parametrize("name", ["db_pass", "smtp_pw", "apiKey", "PASSPHRASE", "user_pin",
                                  "DB_PASSWORD", "pwd", "github_token", "client_secret",
                                  "awsSecretAccessKey", "APIKey", "auth", "my_credentials",
                                  "pass2", "ldapPwd", "openai_key"])
def test_password_like_names_hide_their_values(name: str) -> None:
    for value in ("Hunter2-but-longer", b"raw-bytes-value", 482913):
        state = notebook_state({name: value})
        assert state is not None and f"{name}: {type(value).__name__} (hidden" in state
        assert str(value)[2:8] not in state.split("\n", 1)[1]
        described = describe_value(name, value)
        assert "hidden" in described and str(value)[2:8] not in described


@pytest.mark.parametrize("name", ["spin", "keyboard", "monkey", "pinned_rows", "tokenizer",
                                  "passenger_count", "keys_seen_total", "compass", "author"])
def test_names_that_only_contain_a_secret_word_keep_their_values(name: str) -> None:
    assert notebook_state({name: "visible"}) == f"{STATE_TITLE}\n{name}: str = 'visible'"
