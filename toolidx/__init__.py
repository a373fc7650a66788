"""toolidx: one index of every MCP tool, in a local SQLite file or in PostgreSQL."""

__version__ = "0.1.0"
