"""MCP servers as tool sources: specs and the config file (`_config`), one session per
server on a loop of our own (`_connection`, `_loop_thread`), their tools as `Tool`s
(`_tools`, `_content`), and `McpServers`, which a session uses (`_servers`)."""
