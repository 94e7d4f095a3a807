"""MCP both ways: kep as a client of MCP servers (their tools become kep tools) and as a
server of its own tools (`kep mcp serve`)."""
