"""Finding a tool for a request: hybrid ranking (`hybrid`), BM25 over cached postings (`bm25`),
the in-memory vector matrix (`vecmatrix`), quoted spans (`quoted`), the calibration and the
"no good match" gate (`calibration`), and retrieval evaluation (`eval`). Knows nothing of MCP or
the terminal.
"""
