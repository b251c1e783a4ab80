"""A small MCP server of the official Python SDK (`mcp`, its MCPServer: FastMCP before mcp 2), run with
the streamable HTTP transport: `python3 notes_server.py PORT` serves `http://127.0.0.1:PORT/mcp`.

Tools: `add_note` (a write: not annotated), `read_notes` (annotated `readOnlyHint`), `explode` (raises,
so the SDK answers a result with `isError: true`). Used by test_listen.py.
"""

import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")
NOTES: list[str] = []


@server.tool()
def add_note(text: str) -> str:
    """Adds a note."""
    NOTES.append(text)
    return f"noted {len(NOTES)}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_notes() -> str:
    """Reads the notes."""
    return "\n".join(NOTES)


@server.tool()
def explode() -> str:
    """Always fails."""
    raise RuntimeError("the tool exploded")


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
