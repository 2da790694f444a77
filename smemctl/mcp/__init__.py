"""smem as an MCP server: `smemctl mcp` serves the tools, the profile resource and the
instructions over stdio (or streamable HTTP with `--http`), each tool call forwarded to smemd's
API over its socket or over TCP with a token. It imports the protocol's types, never the engine.
"""
