"""The command line: typer commands that parse, call one library function and hand the result to
`render` (text, rich or versioned JSON); crawl progress (`progress`); diff and audit views
(`diffview`); MCP client config entries (`clients`). No SQL, no ranking, no MCP here.
"""
