"""A server's sign-in address is opened only when it is a plain web address: the address
comes from the server, and a file: or custom-scheme address would hand it a program."""

from __future__ import annotations

import asyncio
import time

import pytest

from nbagent.agent.mcp import _oauth


@pytest.mark.parametrize("address", [
    "file:///etc/passwd", "javascript:alert(1)", "ms-settings:privacy", "vscode://x/y",
    "smb://host/share", "https://auth.example/authorize\u202e?x=1", "https://a.example/\x1b[2J",
], ids=["file", "javascript", "ms-settings", "vscode", "smb", "rlo", "escape"])
def test_a_sign_in_address_that_is_not_plain_http_is_not_opened(
        address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(_oauth, "OPEN_URL", opened.append)
    provider, _ = _oauth.sign_in("http://127.0.0.1:1/mcp", {}, lambda line: None)
    with pytest.raises(_oauth.SignInRefused):
        asyncio.run(provider.context.redirect_handler(address))
    time.sleep(0.05)
    assert opened == []


def test_a_plain_https_address_is_opened_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    said: list[str] = []
    monkeypatch.setattr(_oauth, "OPEN_URL", opened.append)
    provider, signing_in = _oauth.sign_in("http://127.0.0.1:1/mcp", {}, said.append)
    address = "https://auth.example/authorize?client_id=nbagent"
    asyncio.run(provider.context.redirect_handler(address))
    for _ in range(100):
        if opened:
            break
        time.sleep(0.01)
    assert opened == [address] and said == [f"needs you to sign in: {address}"]
    assert signing_in()
