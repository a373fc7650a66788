"""The index, in a SQLite file (sqlean + sqlite-vec, `db`) or in PostgreSQL (`pg`), and toolidx's
other SQLite files (the usage file, `usage`; the trust file, `trust`): opening them, their schemas
and migrations (one per engine: `migrations` for a file, `pg.PG_MIGRATIONS` for a catalog, made
alike as a test checks), and every SQL statement toolidx runs, one module per part of the index,
each statement written once for both engines (`dialect`: how each spells what they write
differently). `index.Index` is the open index as every layer above names it. Nothing above this
folder names a table or runs SQL, nor asks which engine holds the index.
"""
