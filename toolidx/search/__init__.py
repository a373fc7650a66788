"""Finding a tool for a request: the request itself (`request`: `SearchRequest`, its parameters
written once for every front-end), hybrid ranking (`hybrid`: fusion of what the index's
`store.retrieval` interface answers, whatever engine holds it), the action a request asks against
the one a tool does (`actions`), what a request forbids (`negation`), quoted spans (`quoted`),
typing slips (`spelling`), the request's embedding (`query_vector`), what serve learned from usage
(`learned`), the calibration and the "no good match" gate (`calibration`), and
retrieval evaluation (`eval`). Knows nothing of MCP, the terminal or the engine.
"""
