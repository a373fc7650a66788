"""The index, in a SQLite file (`sqlite/`: sqlean + sqlite-vec) or in PostgreSQL (`pg/`), each engine
in a folder of its own with its connection, its schema and migrations (`sqlite.migrations`,
`pg.migrations`, made alike as a test checks) and its `retrieval` (what search asks,
`retrieval.Retrieval`; the file's vectors: `sqlite.matrix`); `db.open_db` picks the engine once.
toolidx's other SQLite files (the usage file, `usage`; the trust file, `trust`) are opened by the
same SQLite-file layer (`sqlite.file`). Every SQL statement toolidx runs is here, one module per
part of the index, each statement written once for both engines (`dialect`: how each spells what
they write differently). `index.Index` is the open index as every layer above names it. Nothing
above this folder names a table or runs SQL, nor asks which engine holds the index.
"""
