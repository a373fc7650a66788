"""The index, in a SQLite file (`sqlite/`: sqlean + sqlite-vec) or in PostgreSQL (`pg/`), each engine
in a folder of its own with its connection, its schema and migrations (`sqlite.migrations`,
`pg.migrations`, made alike as a test checks) and its `retrieval` (what search asks,
`retrieval.Retrieval`; the file's vectors: `sqlite.matrix`); `db.open_db` picks the engine once.
toolidx's other SQLite files (the usage file, `usage`; the trust file, `trust`) are opened by the
same SQLite-file layer (`sqlite.file`). Every SQL statement toolidx runs is here, one module per
part of the index, written once in the SQL both engines speak (`dialect`: how each spells the few
things they write differently); what one engine has and the other lacks (FTS5 or postings,
sqlite-vec or pgvector, PRAGMA or information_schema) is each engine's `writer` beside its
`retrieval` (`writer.Writer`, `db.writer`), so no module here asks which engine it is on.
`index.Reader` is the open index as every layer above names it (`index.Index`, a Reader with the
connection and statements, is this folder's own). Nothing above this folder names a table or runs
SQL, nor asks which engine holds the index.
"""
