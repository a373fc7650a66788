"""What a crawl stores and how: each server's tools as ToolDocs, the vectors to compute (only for
tools whose embedded text changed, or all when the model changed), then one `store.crawls`
write and the trust file's record of the launch lines read. The store only writes; the embedding
policy, its warnings and the trust record are decided here."""

from __future__ import annotations

from collections.abc import Callable

from ..core.clock import now_iso
from ..core.embedding import Embedder, LazyEmbedder, text_hash
from ..core.notices import warn_once
from ..core.servers import ServerResult, launch_hash
from ..core.tooldoc import ToolDoc, build_tooldoc, server_text, server_words
from ..store import crawls, server_vectors, trust, vectors
from ..store.crawls import CrawlSummary
from ..store.index import Reader

Progress = Callable[[str, int, int], None]


def docs_for(result: ServerResult) -> list[ToolDoc]:
    spec = result.spec
    label = server_words(spec.name, result.server_name, result.server_title)
    return [
        build_tooldoc(
            t,
            spec.name,
            config_tags=spec.tags,
            category=spec.tool_categories.get(str(t["name"])) or spec.category,
            trust_server_tags=spec.trust_server_tags,
            server_label=label,
        )
        for t in result.tools
    ]


def store_crawl(
    db: Reader,
    results: list[ServerResult],
    *,
    embedder: Embedder | LazyEmbedder | None,
    config_path: str | None,
    prune: bool,
    started_at: str | None = None,
    progress: Progress | None = None,
    owner: str | None = None,
    prune_other_configs: bool = False,
    vouch: bool = True,
) -> CrawlSummary:
    """Store one crawl (`store.crawls.write_crawl` says what `prune`, `owner` and
    `prune_other_configs` keep), embedding before the write what needs it, and record in the
    trust file the launch lines it read (`vouch`; not for tools handed over in memory, which no
    launch line serves)."""
    for r in results:
        r.mask_secrets()  # before anything of a server's answer is kept
    docs = {r.spec.name: docs_for(r) for r in results if r.ok}
    vecs, used = _vectors(db, [d for ds in docs.values() for d in ds], embedder, progress)
    summary = crawls.write_crawl(
        db,
        results,
        docs,
        vecs=vecs,
        embedder=used,
        config_path=config_path,
        prune=prune,
        started_at=started_at,
        owner=owner,
        prune_other_configs=prune_other_configs,
    )
    embed_servers(db, used or embedder)
    started = {r.spec.name: r.started_at or started_at or now_iso() for r in results}
    for row in summary.servers:
        if row.get("superseded_by"):  # the latest crawl of a server wins, whichever commits last
            name = row["server"]
            warn_once(
                f"superseded:{name}",
                f"{name}: the index holds a later crawl of it (at {row['superseded_by']}); this crawl's "
                f"result, from {started[name]}, was not written",
            )
    # this crawl read these launch lines from the config the user named: serve may later start
    # them from the index's record with no --config (store/trust.py says why outside the index)
    if vouch:
        trust.record([(r.spec.name, launch_hash(r.spec.public())) for r in results], config_path)
    return summary


def _vectors(
    db: Reader, docs: list[ToolDoc], embedder: Embedder | LazyEmbedder | None, progress: Progress | None
) -> tuple[dict[str, bytes], Embedder | None]:
    """(vectors by tool id for the tools whose embedded text changed, or every tool when the model
    did; the embedder that made them, None when there were none to make)."""
    if embedder is not None and not db.vec_available:
        warn_once("vec", f"{db.vec_error}: semantic search is off, keyword search works")
        return {}, None
    if embedder is None:
        return {}, None
    model_changed = vectors.model_changed(db, embedder.model, embedder.sha256)
    hashes = crawls.embed_hashes(db)
    todo = [d for d in docs if model_changed or hashes.get(d.id) != text_hash(embedder.model, d.embed_text)]
    if not todo:
        return {}, None  # nothing to embed: the model need not even load
    if isinstance(embedder, LazyEmbedder):
        if progress:  # loading takes seconds: say so, the servers' display has gone still
            progress("model", 0, 1)
        loaded = embedder.get()  # None (warned once) when the model cannot be had
        if progress:
            progress("model", 1, 1)
        if loaded is None:
            return {}, None
        embedder = loaded
    if db.get_meta("embed_dim") not in (None, str(embedder.dim)):
        todo = docs  # same name, other dimension: every vector must be redone
    return dict(zip([d.id for d in todo], embed_texts(embedder, [d.embed_text for d in todo], progress))), embedder


def embed_servers(db: Reader, embedder: Embedder | LazyEmbedder | None) -> int:
    """Embed each server's text (core.tooldoc.server_text: search.server_match' evidence) whose vector
    is missing or from another text or model, with the index's model; drop the vectors of servers
    gone. Returns how many were embedded. A handful per crawl: a server's text changes with its
    title, instructions or tools."""
    if embedder is None or not db.vec_available or not server_vectors.has_table(db):
        return 0
    if db.get_meta("embed_model") != embedder.model:
        return 0  # the index has no vectors of this model (yet): its tools' vectors come first
    rows = server_vectors.sources(db)
    texts = {
        r["name"]: server_text(r["name"], r["server_name"], r["server_title"], r["instructions"], r["tools"])
        for r in rows
    }
    key = f"{embedder.model}\n{embedder.sha256 or ''}"
    wanted = {s: text_hash(key, t) for s, t in texts.items()}
    stored = server_vectors.hashes(db)
    todo = [s for s in texts if stored.get(s) != wanted[s]]
    blobs: list[bytes] = []
    if todo:
        loaded = embedder.get() if isinstance(embedder, LazyEmbedder) else embedder
        if loaded is None:
            return 0
        blobs = embed_texts(loaded, [texts[s] for s in todo], None)
    server_vectors.write(db, [(s, wanted[s], b) for s, b in zip(todo, blobs)], set(texts))
    return len(todo)


def embed_texts(embedder: Embedder, texts: list[str], progress: Progress | None) -> list[bytes]:
    """Vectors for `texts`, in chunks so the progress display moves every second or two: 320 tools
    took 20-24 s on a busy 2-core machine in chunks of 32 or of 256 alike (#36 item 1)."""
    out: list[bytes] = []
    step = 32
    if progress and texts:
        progress("embed", 0, len(texts))
    for i in range(0, len(texts), step):
        out.extend(embedder.embed_documents(texts[i : i + step]))
        if progress:
            progress("embed", min(i + step, len(texts)), len(texts))
    return out


def embed_missing(db: Reader, embedder: Embedder, progress: Progress | None = None) -> int:
    """Embed every tool whose vector is missing or out of date (`toolidx embed`). Returns how many."""
    if not db.vec_available:
        warn_once("vec", f"{db.vec_error}: semantic search is off, keyword search works")
        return 0
    redo = vectors.model_changed(db, embedder.model, embedder.sha256) or db.get_meta("embed_dim") != str(embedder.dim)
    todo = [r for r in crawls.embed_rows(db) if redo or r["embed_hash"] != text_hash(embedder.model, r["embed_text"])]
    crawls.write_vectors(db, embedder, todo, embed_texts(embedder, [r["embed_text"] for r in todo], progress))
    embed_servers(db, embedder)
    return len(todo)
