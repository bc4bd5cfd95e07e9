"""An MCP server that needs sign-in, for the tests: the SDK's `MCPServer` with its own
OAuth authorization server (dynamic registration, PKCE, metadata), whose sign-in page
approves at once and redirects back with a code. `python oauth_server.py PORT` serves over
streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import secrets
import sys
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class ApprovesAtOnce:
    """An in-memory authorization server whose user always says yes."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300,
            client_id=str(client.client_id), code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        token = secrets.token_urlsafe(24)
        self.tokens[token] = AccessToken(token=token, client_id=str(client.client_id),
                                         scopes=authorization_code.scopes,
                                         expires_at=int(time.time()) + 3600,
                                         resource=authorization_code.resource)
        return OAuthToken(access_token=token, token_type="Bearer", expires_in=3600)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
        return None

    async def exchange_refresh_token(self, client: Any, refresh_token: Any,
                                     scopes: list[str]) -> OAuthToken:
        raise NotImplementedError

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)

    async def revoke_token(self, token: Any) -> None:
        self.tokens.pop(getattr(token, "token", ""), None)

    async def exchange_identity_assertion(self, *args: Any, **kwargs: Any) -> OAuthToken:
        raise NotImplementedError  # enterprise identity assertions: not offered here


def make(port: int) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    server = MCPServer("private", auth_server_provider=ApprovesAtOnce(), auth=AuthSettings(
        issuer_url=base, resource_server_url=f"{base}/mcp",
        client_registration_options=ClientRegistrationOptions(enabled=True)))

    @server.tool()
    def secret_sum(a: int, b: int) -> int:
        """Add two numbers, for signed-in users only."""
        return a + b

    return server


if __name__ == "__main__":
    port = int(sys.argv[1])
    make(port).run("streamable-http", host="127.0.0.1", port=port)
