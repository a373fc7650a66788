"""Server evidence (issue 43): a tool's server is evidence for the tool ("save a fact to the
knowledge graph" and the `memory` server). Each server's text (core.tooldoc.server_text: its
names, title, the opening of its instructions, its tools' names) is embedded at crawl time
(store/server_vectors.py); a hybrid search takes the cosine of the request to every server (tens
to thousands: one small product), gives each candidate its server's lead over the median server
("server"), and lets the tools of the best JOIN_SERVERS servers join the candidates (at most
JOIN_TOOLS, by their own cosine, as search.learned joins a tool no retriever found). The fusion
weighs "server" by the model's fitted weight (calibration.json `server`; 0 for a model fitted
without it). Fitted and measured by benchmarks/fit_fusion.py --server (docs/research/search.md,
round 14: a small signal; "remember that Alice likes tea" is not near enough to `memory` in these
models for any weight the bench sets admit)."""

from __future__ import annotations

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


def _matrix(db: Reader) -> tuple[list[str], Any, dict[str, int]] | None:
    """(server names, their unit vectors as rows, name -> row), once per index version; None
    without any (or with vectors of several sizes: a model change half done)."""

    def build() -> tuple[list[str], Any, dict[str, int]] | None:
        import numpy as np

        rows = server_vectors.read(db)
        if not rows or len({len(b) for _, b in rows}) != 1:
            return None
        m = np.vstack([np.frombuffer(b, dtype=np.float32) for _, b in rows])
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        names = [s for s, _ in rows]
        return names, m / np.where(norms > 0, norms, 1.0), {n: i for i, n in enumerate(names)}

    return db.cache.get("server_vectors", build, size=lambda e: len(e[0]) if e else 0)


def _members(db: Reader, index: dict[str, int]) -> Any:
    """Each tool's server as its row of the server matrix, by rowid (-1: none), once per index
    version: 4 bytes a tool (a dict of 100k tools held ~10 MB)."""

    def build() -> Any:
        import numpy as np

        rows = server_vectors.tool_servers(db)
        out = np.full(max((r for r, _ in rows), default=0) + 1, -1, dtype=np.int32)
        for r, s in rows:
            out[r] = index.get(s, -1)
        return out

    return db.cache.get("tool_servers", build, size=len)


def leads(db: Reader, qv: bytes) -> tuple[list[str], Any, dict[str, int]] | None:
    """(server names, each one's cosine to the request less the median server's, name -> index);
    None without server vectors, or with vectors of another size than the request's."""
    import numpy as np

    found = _matrix(db)
    if found is None:
        return None
    names, m, index = found
    q = np.frombuffer(qv, dtype=np.float32)
    if q.shape[0] != m.shape[1]:
        return None
    # einsum, not a BLAS product: OpenBLAS's spinning threads made this one product 15 ms on a busy
    # machine (store/sqlite/matrix.py's _dot says the same of the tools' vectors)
    cos = np.einsum("ij,j->i", m, q) / (float(np.linalg.norm(q)) or 1.0)
    return names, cos - float(np.median(cos)), index


def add(db: Reader, qv: bytes, cands: dict[int, dict], filters: Filters | None) -> None:
    """Give each candidate its server's lead over the median server's cosine ("server", 0 at or
    under it; "server_name") and let the best servers' tools that pass the filters join (module
    doc)."""
    import numpy as np

    found = leads(db, qv)
    if found is None:
        return
    names, lead, index = found
    of = _members(db, index)
    k = min(JOIN_SERVERS, len(names))
    best = [int(i) for i in np.argpartition(-lead, k - 1)[:k] if lead[i] >= JOIN_LEAD]
    missing = [int(r) for i in sorted(best, key=lambda i: -lead[i]) for r in np.flatnonzero(of == i) if r not in cands]
    allowed = filtered_rowids(db, filters) if missing else None
    if allowed is not None:
        missing = [r for r in missing if r in allowed]
    if missing:
        cos = db.retrieval.cosines(qv, missing)
        joined = sorted((r for r in missing if r in cos), key=lambda r: -cos[r])[:JOIN_TOOLS]
        for r in joined:
            cands[r] = {"bm25": 0.0, "cos": cos[r], "fuzzy": 0.0, "joined": 1}
    for r, c in cands.items():
        i = int(of[r]) if r < len(of) else -1
        if i >= 0:
            c["server"], c["server_name"] = max(0.0, float(lead[i])), names[i]


def warm(db: Reader) -> None:
    """Read the server vectors and each tool's server now (search.hybrid.warm)."""
    found = _matrix(db)
    if found is not None:
        _members(db, found[2])
