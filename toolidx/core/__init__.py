"""The vocabulary every layer shares, importing nothing above it: errors and notices, the tool
document (`tooldoc`: every derivation from a tool definition) and its hash, JSON Schemas
(validation, example arguments), filters, token budgets, tokenization, the embedder, and the
crawl hand-off types (`servers`: ServerSpec, ServerResult).
"""
