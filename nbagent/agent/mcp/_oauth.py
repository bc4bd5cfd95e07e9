"""Signing in to a remote MCP server that needs it, through the SDK's OAuth support: when
the server answers 401, the SDK discovers its authorization server, registers nbagent (or
uses the client id the spec gives), and sends the user to sign in; the browser comes back
to a one-shot listener on 127.0.0.1, and the tokens are kept for the session, in memory.

How the sign-in page is opened is `OPEN_URL` (the system browser; a bench swaps it for a
headless opener). The sign-in link is also said in one line, for a browser elsewhere.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import webbrowser
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from .._inert_text import strip_hidden

SIGN_IN_TIMEOUT_S = 300.0  # how long a sign-in may take (a person, a browser)
SIGN_IN = "needs you to sign in"  # the line the user must see while the start waits
OPEN_URL: Callable[[str], Any] = webbrowser.open
_PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close"
         b"\r\n\r\nnbagent: signed in; you can close this tab.\n")


class SignInRefused(RuntimeError):
    """A server's sign-in address we will not open (not http(s), or hiding characters)."""


class MemoryTokens:
    """The SDK's `TokenStorage`, kept in memory for the session."""

    def __init__(self, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Callback:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization server's redirect:
    `listen()` before the browser goes to the sign-in page, `wait()` for the code."""

    def __init__(self, port: int = 0) -> None:
        if not port:  # a free port now; it listens only while a sign-in waits
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = int(probe.getsockname()[1])
        self.port = port
        self.url = f"http://127.0.0.1:{port}/callback"
        self._arrived: asyncio.Future[AuthorizationCodeResult] | None = None
        self._listener: asyncio.Server | None = None

    async def listen(self) -> None:
        self._arrived = asyncio.get_running_loop().create_future()
        self._listener = await asyncio.start_server(self._answer, "127.0.0.1", self.port)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            query = parse_qs(urlparse(line.split(" ")[1] if " " in line else "").query)
            writer.write(_PAGE)
            await writer.drain()
            arrived = self._arrived
            if "code" in query and arrived is not None and not arrived.done():
                state, issuer = query.get("state", []), query.get("iss", [])
                arrived.set_result(AuthorizationCodeResult(
                    code=query["code"][0], state=state[0] if state else None,
                    iss=issuer[0] if issuer else None))
        except (OSError, TimeoutError, IndexError):
            pass
        finally:
            writer.close()

    async def wait(self, timeout: float = SIGN_IN_TIMEOUT_S) -> AuthorizationCodeResult:
        if self._arrived is None:
            await self.listen()
        assert self._arrived is not None
        try:
            return await asyncio.wait_for(self._arrived, timeout)
        finally:
            if self._listener is not None:
                self._listener.close()
            self._listener = self._arrived = None


def sign_in(url: str, settings: dict[str, Any],
            say: Callable[[str], None]) -> tuple[OAuthClientProvider, Callable[[], bool]]:
    """The SDK's OAuth provider for one server, and a function saying whether a sign-in is
    under way. `settings` are the spec's `oauth` (`clientId`, `clientSecret`, `scope`,
    `callbackPort`, as Claude Code's config names them); `say` gets the sign-in line."""
    callback = Callback(int(settings.get("callbackPort") or 0))
    client_id = settings.get("clientId")
    secret = settings.get("clientSecret")
    metadata = OAuthClientMetadata(
        client_name="nbagent", redirect_uris=[AnyUrl(callback.url)],
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        scope=settings.get("scope"))
    known = None
    if client_id:  # registered beforehand: no dynamic registration
        known = OAuthClientInformationFull(
            client_id=client_id, client_secret=secret, redirect_uris=[AnyUrl(callback.url)],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="client_secret_basic" if secret else "none")
    waiting = {"now": False}

    async def redirect(authorization_url: str) -> None:
        # The address comes from the server: open only a plain web address (a file: or a
        # custom scheme would hand the server a program on the user's machine).
        if (urlparse(authorization_url).scheme.lower() not in ("http", "https")
                or strip_hidden(authorization_url) != authorization_url):
            raise SignInRefused("its sign-in address is not a plain http(s) address, so it "
                                "was not opened")
        waiting["now"] = True
        await callback.listen()  # before the browser can come back
        say(f"{SIGN_IN}: {authorization_url}")
        # a browser may block while it starts; the listener runs on this loop meanwhile
        threading.Thread(target=OPEN_URL, args=(authorization_url,), daemon=True).start()

    async def came_back() -> AuthorizationCodeResult:
        try:
            return await callback.wait()
        finally:
            waiting["now"] = False

    provider = OAuthClientProvider(url, metadata, MemoryTokens(known), redirect, came_back)
    return provider, lambda: waiting["now"]
