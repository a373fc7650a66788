"""Finding a tool for a request: hybrid ranking (`hybrid`: fusion of what the index's
`store.retrieval` interface answers, whatever engine holds it), quoted spans (`quoted`), typing
slips (`spelling`), the calibration and the "no good match" gate (`calibration`), and retrieval
evaluation (`eval`). Knows nothing of MCP, the terminal or the engine.
"""
