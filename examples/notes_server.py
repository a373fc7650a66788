"""A small real MCP server for the live example (`examples/live.yaml`, crawled by scripts/setup.sh):
notes kept in memory.

Run by toolidx over stdio; needs the `mcp` package, so live.yaml starts it with the Python toolidx
runs under (`${TOOLIDX_PYTHON}`): `toolidx crawl -c examples/live.yaml --db example.db`.
"""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes", title="Notes", version="1.0.0",
                   instructions="Keep short text notes for the current session.")
_notes: dict[str, str] = {}


@server.tool(title="Add a note", annotations=ToolAnnotations(idempotentHint=True))
def add_note(title: str, text: str) -> str:
    """Save a note under a title (replaces a note with the same title)."""
    _notes[title] = text
    return f"saved {title!r}"


@server.tool(title="Search notes", annotations=ToolAnnotations(readOnlyHint=True))
def search_notes(query: str, limit: int = 10) -> list[str]:
    """Find notes whose title or text contains the query (case-insensitive)."""
    q = query.lower()
    return [t for t, body in _notes.items() if q in t.lower() or q in body.lower()][:limit]


@server.tool(title="Delete a note", annotations=ToolAnnotations(destructiveHint=True))
def delete_note(title: str) -> bool:
    """Delete the note with this title; returns whether it existed."""
    return _notes.pop(title, None) is not None


if __name__ == "__main__":
    server.run()
