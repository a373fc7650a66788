"""The index in a SQLite file: opening it (`database`: sqlite-vec, the file's kind and pragmas),
the SQLite-file layer under every file toolidx keeps (`file`), the file's schema and migrations
(`migrations`) and what search asks of it (`retrieval`: FTS5 postings and vectors held in memory).
"""
