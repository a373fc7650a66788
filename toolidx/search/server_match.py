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
models for any weight the bench sets admit).

The words reach it instead (`kin`, round 15): a request whose verb is of one family with a
server's one-word name (search.derive: "remember" and `memory`), and rarer in the catalog than
that name, is searched also as the name by keyword, and that server leads by KIN_LEAD."""

from __future__ import annotations

from typing import Any

from ..core.filters import Filters
from ..core.tooldoc import server_text, split_name
from ..store import server_vectors
from ..store.index import Reader
from ..store.tools import filtered_rowids
from . import actions, derive

JOIN_SERVERS = 2  # the best servers whose tools may join the candidates
JOIN_TOOLS = 10  # joined at most, per search: the best by their own cosine
# the lead over the median server's cosine a server needs for its tools to join: a request about
# nothing in particular lifts no server
JOIN_LEAD = 0.1
# the lead of a server the request names by a word of its name's family (kin): a cosine of 1 to
# the request, as near as a text can be ("remember ..." and `memory`)
KIN_LEAD = 1.0


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


def add(
    db: Reader, qv: bytes, cands: dict[int, dict], filters: Filters | None, named: list[str] | tuple[str, ...] = ()
) -> None:
    """Give each candidate its server's lead over the median server's cosine ("server", 0 at or
    under it; "server_name") and let the best servers' tools that pass the filters join (module
    doc). `named`: servers the request names by a word of their name's family (kin): each leads
    by KIN_LEAD at least."""
    import numpy as np

    found = leads(db, qv)
    if found is None:
        return
    names, lead, index = found
    if named:
        lead = lead.copy()
        for s in named:
            if s in index:
                lead[index[s]] = max(float(lead[index[s]]), KIN_LEAD)
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


def _named(db: Reader) -> dict[str, tuple[str, list[str]]]:
    """{stem: (word, the servers it names)} of the servers named by one word ("memory",
    "mcp-memory"; filler such as "mcp" and "server" aside), the word as the keyword index stems
    it, once per index version."""

    def build() -> dict[str, tuple[str, list[str]]]:
        found = _matrix(db)
        by_word: dict[str, list[str]] = {}
        for n in found[0] if found else []:
            words = split_name(server_text(n, None, None, None))  # its name's words, less "mcp", "server"
            if len(words) == 1 and words[0].isalpha():
                by_word.setdefault(words[0], []).append(n)
        cut = db.retrieval.stems(list(by_word)) or {}
        return {cut[w][0]: (w, ns) for w, ns in by_word.items() if len(cut.get(w, ())) == 1}

    return db.cache.get("server_names", build, size=len)


def kin(db: Reader, text: str) -> dict[str, list[str]]:
    """{the request's verb: the server names related to it by derivation (search.derive)}, searched
    beside it as a typing slip's corrections are: "remember that Alice likes tea" and the `memory`
    server. The verb is the request's first word after its opening (search.actions.read_request):
    what it asks done, not what it is about ("start a countdown timer" is not about `time`). Only
    a verb the catalog says less often than the name (df): "read" is every reader's word, and a
    request to read is not about a `reader` server; "remember" is one tool's ("Remember Me"),
    `memory` nine's."""
    verb = actions.read_request(text)[1]
    words = [verb] if verb and verb.isalpha() else []
    named = _named(db) if words else {}
    if not named:
        return {}
    cut = db.retrieval.stems(words) or {}
    found = {
        w: sorted({named[r][0] for t in cut.get(w, ()) for r in derive.related(t) if r in named})
        for w in words
        if not set(cut.get(w, ())) & named.keys()
    }
    found = {w: ns for w, ns in found.items() if ns}
    if not found:
        return {}
    df = db.retrieval.document_frequency(sorted(set(found) | {n for ns in found.values() for n in ns}))
    out = {w: [n for n in ns if df[w] < df[n]] for w, ns in found.items()}
    return {w: ns for w, ns in out.items() if ns}


def kin_servers(db: Reader, kin: dict[str, list[str]]) -> list[str]:
    """The servers the words of `kin` (its values: server names as words) name."""
    words = {n for ns in kin.values() for n in ns}
    return sorted({s for w, ss in _named(db).values() if w in words for s in ss}) if words else []


def warm(db: Reader) -> None:
    """Read the server vectors, each tool's server and the servers named by one word now, and the
    table of words related by derivation (~40 ms) when one is (search.hybrid.warm)."""
    found = _matrix(db)
    if found is not None:
        _members(db, found[2])
        if _named(db):
            derive.related("")
