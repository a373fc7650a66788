"""The SQLite index file: opening it (sqlean + sqlite-vec, `db`), its schema and migrations
(`migrations`), and every SQL statement toolidx runs, one module per part of the file. Nothing
above this folder names a table.
"""
