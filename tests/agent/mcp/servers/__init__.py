"""MCP servers the tests start as real processes, and how to start them."""
