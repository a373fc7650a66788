"""The index in PostgreSQL (`--db postgresql://...`): the connection and catalog (`database`), its
schema and migrations (`migrations`) and what search asks of it (`retrieval`: SQL over
`tool_terms` and pgvector).
"""
