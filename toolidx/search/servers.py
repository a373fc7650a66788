"""Server evidence (issue 43): a tool's server is evidence for the tool. "remember that Alice likes
tea" names no word of the `memory` server's tools ("knowledge graph", "entities",
"observations"); only the server is called memory. Each server's text (core.tooldoc.server_text:
its names, title, the opening of its instructions, its tools' names) is embedded at crawl time
(store/server_vectors.py); a hybrid search takes the cosine of the request to every server (tens
to hundreds: one small matrix product), gives each candidate its server's ("server"), and lets
the tools of the best JOIN_SERVERS servers join the candidates (at most JOIN_TOOLS, by their own
cosine, as search.learned joins a tool no retriever found). The fusion weighs "server" by the
model's fitted weight (calibration.json `server`; 0 for a model fitted without it: nothing
changes). Fitted and measured by benchmarks/fit_fusion.py (docs/research/search.md, round 14)."""

from __future__ import annotations

import statistics
from typing import Any

from ..core.filters import Filters
from ..store import server_vectors
from ..store.index import Reader
from ..store.tools import filtered_rowids

JOIN_SERVERS = 2  # the best servers whose tools may join the candidates
JOIN_TOOLS = 10  # joined at most, per search: the best by their own cosine
# the lead over the median server's cosine a server needs for its tools to join: a request about
# nothing in particular lifts no server
JOIN_LEAD = 0.1


def _matrix(db: Reader) -> tuple[list[str], Any] | None:
    """(server names, their unit vectors as rows), once per index version; None without any."""

    def build() -> tuple[list[str], Any] | None:
        import numpy as np

        rows = server_vectors.read(db)
        if not rows:
            return None
        m = (
            np.vstack([np.frombuffer(b, dtype=np.float32) for _, b in rows])
            if len({len(b) for _, b in rows}) == 1
            else None
        )
        if m is None:
            return None
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return [s for s, _ in rows], m / np.where(norms > 0, norms, 1.0)

    return db.cache.get("server_vectors", build, size=lambda e: len(e[0]) if e else 0)


def _members(db: Reader) -> tuple[dict[int, str], dict[str, list[int]]]:
    """(rowid -> server, server -> its rowids), once per index version."""

    def build() -> tuple[dict[int, str], dict[str, list[int]]]:
        of: dict[int, str] = {}
        tools: dict[str, list[int]] = {}
        for r, s in server_vectors.tool_servers(db):
            of[r] = s
            tools.setdefault(s, []).append(r)
        return of, tools

    return db.cache.get("tool_servers", build, size=lambda e: len(e[0]))


def scores(db: Reader, qv: bytes) -> dict[str, float]:
    """server -> cosine of the request and the server's text (empty: no server vectors, or of
    another dimension than the request's)."""
    import numpy as np

    found = _matrix(db)
    if found is None:
        return {}
    names, m = found
    q = np.frombuffer(qv, dtype=np.float32)
    if q.shape[0] != m.shape[1]:
        return {}
    n = float(np.linalg.norm(q)) or 1.0
    return dict(zip(names, (m @ q / n).tolist()))


def add(db: Reader, qv: bytes, cands: dict[int, dict], filters: Filters | None) -> dict[str, float]:
    """Give each candidate its server's lead over the median server's cosine ("server", 0 at or
    under it; "server_name") and let the best servers'
    tools that pass the filters join (module doc). Returns the servers' cosines."""
    by_server = scores(db, qv)
    if not by_server:
        return by_server
    of, tools = _members(db)
    ranked = sorted(by_server, key=lambda s: -by_server[s])
    median = statistics.median(by_server.values())
    lead = [s for s in ranked[:JOIN_SERVERS] if by_server[s] - median >= JOIN_LEAD]
    missing = [r for s in lead for r in tools.get(s, ()) if r not in cands]
    allowed = filtered_rowids(db, filters) if missing else None
    if allowed is not None:
        missing = [r for r in missing if r in allowed]
    if missing:
        cos = db.retrieval.cosines(qv, missing)
        best = sorted((r for r in missing if r in cos), key=lambda r: -cos[r])[:JOIN_TOOLS]
        for r in best:
            cands[r] = {"bm25": 0.0, "cos": cos[r], "fuzzy": 0.0, "joined": 1}
    for r, c in cands.items():
        s = of.get(r)
        if s is not None and s in by_server:
            c["server"], c["server_name"] = max(0.0, by_server[s] - median), s
    return by_server
