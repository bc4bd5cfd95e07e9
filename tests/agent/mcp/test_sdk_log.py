"""The MCP SDK's log records as status lines (`_sdk_log`): a warning the SDK logs while a
session reports to someone reaches that session's reporter as one line (with the
exception's first reason), once per kind however often it recurs, named for its server;
with no session reporting, the record reaches nobody here."""

from __future__ import annotations

import logging

from nbagent.agent.mcp import _sdk_log


def test_a_record_of_the_sdk_is_one_line_for_its_server_said_once() -> None:
    said: list[str] = []
    _sdk_log.install()
    _sdk_log.install()  # idempotent: one handler, one line per record
    report = _sdk_log.once_per_kind("files", said.append)
    sdk = logging.getLogger("mcp.client.stdio")
    token = _sdk_log.CURRENT.set(report)
    try:
        for _ in range(3):
            try:
                raise ValueError("Invalid JSON: expected value at line 1\nmore detail")
            except ValueError:
                sdk.warning("Failed to parse JSONRPC message from server.", exc_info=True)
        sdk.info("not a warning")
    finally:
        _sdk_log.CURRENT.reset(token)
    sdk.warning("no session is reporting")
    assert said == ["MCP server 'files': Failed to parse JSONRPC message from server "
                    "(ValueError: Invalid JSON: expected value at line 1)"]
