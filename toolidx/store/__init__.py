"""The index, in a SQLite file (sqlean + sqlite-vec, `db`) or in PostgreSQL (`pg`), and toolidx's
other SQLite files (the usage file): opening them, their schemas and migrations (`migrations`),
and every SQL statement toolidx runs, one module per part of the index. Nothing above this folder
names a table or runs SQL, nor asks which engine holds the index.
"""
