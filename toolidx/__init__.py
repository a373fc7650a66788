"""toolidx: one local SQLite index of every MCP tool."""

__version__ = "0.1.0"
