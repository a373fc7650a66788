"""Getting tools out of MCP servers: configs (`mcpServers` shapes, `${VAR}`), saved tool lists
(`sources`), MCP client connections over stdio / Streamable HTTP / SSE (`connect`), and one crawl
run that hands every server's result to the store (`run`).
"""
