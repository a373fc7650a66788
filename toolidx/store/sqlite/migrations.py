"""The index schema as numbered migrations. Append only: a released migration never changes.

`PRAGMA user_version` holds how many migrations have been applied. The vector table is not here:
its dimension depends on the embedding model, so `store.vectors` creates it when vectors arrive.

A migration listed in ADDITIVE only creates new tables (or a column no reader reads): a file it has
not been applied to can still be opened read-only (a downloaded baseline), and its readers treat the
missing table as empty.
"""

APPLICATION_ID = 0x54494458  # "TIDX" in PRAGMA application_id marks a file as ours

MIGRATIONS: list[str] = [
    # 1: the first schema
    """
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT
    );

    -- One row per configured server, as of its latest crawl attempt.
    CREATE TABLE servers (
        name             TEXT PRIMARY KEY,      -- the config key
        transport        TEXT NOT NULL,         -- stdio | http | sse | tools_file
        connect          TEXT,                  -- JSON: how to reach it, secrets removed
        server_name      TEXT,                  -- serverInfo.name
        server_title     TEXT,                  -- serverInfo.title
        server_version   TEXT,                  -- serverInfo.version
        protocol_version TEXT,
        instructions     TEXT,
        capabilities     TEXT,                  -- JSON
        category         TEXT,
        tags             TEXT NOT NULL DEFAULT '[]',  -- JSON array, from the config
        status           TEXT NOT NULL,         -- ok | failed
        error            TEXT,                  -- why the last attempt failed
        stderr_tail      TEXT,
        tool_count       INTEGER NOT NULL DEFAULT 0,
        invalid_tools    TEXT NOT NULL DEFAULT '[]',  -- JSON [{name, reason}]
        crawled_at       TEXT NOT NULL,         -- ISO 8601 UTC of the last attempt
        duration_ms      REAL,
        last_ok_at       TEXT,
        last_crawl_id    INTEGER
    );

    -- One row per tool currently in the index. rowid is shared with tools_fts and tool_vectors.
    CREATE TABLE tools (
        rowid           INTEGER PRIMARY KEY,
        id              TEXT NOT NULL UNIQUE,   -- "server/name"
        server          TEXT NOT NULL REFERENCES servers(name) ON DELETE CASCADE,
        name            TEXT NOT NULL,
        title           TEXT,
        description     TEXT NOT NULL DEFAULT '',
        input_schema    TEXT,                   -- JSON, as sent
        output_schema   TEXT,                   -- JSON, as sent
        annotations     TEXT,                   -- JSON, as sent
        icons           TEXT,                   -- JSON, as sent
        meta            TEXT,                   -- JSON "_meta", as sent
        definition      TEXT NOT NULL,          -- the whole tool as sent (wire JSON)
        tags            TEXT NOT NULL DEFAULT '[]',   -- JSON array, derived
        category        TEXT,
        param_names     TEXT NOT NULL DEFAULT '[]',   -- JSON array, top-level input properties
        read_only       INTEGER,                -- annotations.readOnlyHint (NULL: not said)
        destructive     INTEGER,                -- annotations.destructiveHint (NULL: not said)
        hash            TEXT NOT NULL,          -- sha256 of the canonical definition
        embed_text      TEXT NOT NULL,          -- the text that is embedded (README: "Embedded text")
        embed_hash      TEXT,                   -- sha256(model + embed_text) of the stored vector
        stale           INTEGER NOT NULL DEFAULT 0,   -- 1: its server failed at the last crawl
        stale_reason    TEXT,
        first_seen      TEXT NOT NULL,
        updated_at      TEXT NOT NULL,
        UNIQUE (server, name)
    );
    CREATE INDEX tools_server ON tools(server);
    CREATE INDEX tools_category ON tools(category);

    -- Keyword index. Names are split into words; rowid = tools.rowid.
    CREATE VIRTUAL TABLE tools_fts USING fts5(
        name, title, description, server, tags, params,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );

    CREATE TABLE crawls (
        id              INTEGER PRIMARY KEY,
        started_at      TEXT NOT NULL,
        finished_at     TEXT,
        config_path     TEXT,
        toolidx_version TEXT,
        servers_ok      INTEGER NOT NULL DEFAULT 0,
        servers_failed  INTEGER NOT NULL DEFAULT 0,
        tool_count      INTEGER NOT NULL DEFAULT 0,
        embedded        INTEGER NOT NULL DEFAULT 0
    );

    -- What each server looked like in each crawl.
    CREATE TABLE crawl_servers (
        crawl_id        INTEGER NOT NULL REFERENCES crawls(id) ON DELETE CASCADE,
        server          TEXT NOT NULL,
        status          TEXT NOT NULL,
        error           TEXT,
        server_name     TEXT,
        server_version  TEXT,
        protocol_version TEXT,
        tool_count      INTEGER NOT NULL DEFAULT 0,
        duration_ms     REAL,
        PRIMARY KEY (crawl_id, server)
    );

    -- Every distinct tool definition ever seen, content-addressed.
    CREATE TABLE tool_versions (
        hash        TEXT PRIMARY KEY,
        definition  TEXT NOT NULL
    );

    -- Which tool versions each crawl saw. A failed server's tools are carried over with stale = 1.
    CREATE TABLE crawl_tools (
        crawl_id    INTEGER NOT NULL REFERENCES crawls(id) ON DELETE CASCADE,
        tool_id     TEXT NOT NULL,
        server      TEXT NOT NULL,
        name        TEXT NOT NULL,
        hash        TEXT NOT NULL REFERENCES tool_versions(hash),
        stale       INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (crawl_id, tool_id)
    );
    CREATE INDEX crawl_tools_hash ON crawl_tools(hash);
    """,
    # 2: what a person approved (toolidx approve; serve --quarantine). No foreign key to tools:
    # an approval outlives re-crawls, and a tool that comes back unchanged is still approved.
    """
    CREATE TABLE approvals (
        tool_id      TEXT PRIMARY KEY,          -- "server/name"
        hash         TEXT NOT NULL,             -- tools.hash approved (its definition: tool_versions)
        approved_by  TEXT NOT NULL,             -- user name from the environment
        approved_at  TEXT NOT NULL              -- ISO 8601 UTC
    );
    """,
    # 3: what the agent reads of a server (its title and instructions), as approved with its
    # tools: serve --quarantine refuses the server's tools once that text changes
    """
    CREATE TABLE server_approvals (
        server       TEXT PRIMARY KEY,          -- servers.name
        hash         TEXT NOT NULL,             -- sha256 of the canonical JSON {title, instructions}
        title        TEXT,                      -- servers.server_title as approved
        instructions TEXT,                      -- servers.instructions as approved
        approved_by  TEXT NOT NULL,
        approved_at  TEXT NOT NULL
    );
    """,
    # 4: which config each server belongs to (#31): a crawl prunes only servers of its own config.
    # Its identity: the config's `toolidx.owner` if it names one, else the config file's absolute
    # path. Rows crawled before this migration belong to the config their last crawl recorded.
    """
    ALTER TABLE servers ADD COLUMN owner TEXT;
    UPDATE servers SET owner = (SELECT config_path FROM crawls WHERE crawls.id = servers.last_crawl_id);
    """,
    # 5: each server's own text embedded (issue 43: server evidence, search/server_match.py): a request
    # for what a server is about ("remember ..." and the `memory` server) finds its tools
    """
    CREATE TABLE server_vectors (
        server     TEXT PRIMARY KEY,            -- servers.name
        embed_hash TEXT NOT NULL,               -- sha256(model + core.tooldoc.server_text)
        vector     BLOB NOT NULL                -- float32, the tools' model
    );
    """,
]

# migrations (numbered from 1) that only add tables, or a column only writers read (4: a crawl
# reads servers.owner to prune; a reader of a file without it has nothing to prune; 5: a reader
# without server vectors searches without server evidence)
ADDITIVE = frozenset({2, 3, 4, 5})
